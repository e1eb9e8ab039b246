// The trainer on data-parallel ranks (in-process, CPU): N ranks, each with its shard of every
// global batch and a grad_sync that all-reduces (averages) the flat gradient, train the same model
// as one process on the global batch, and stay bitwise identical to each other.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "gtl/data/synthetic_digits.h"
#include "gtl/distributed/in_process.h"
#include "gtl/train/trainer.h"
#include "gtl_test.h"

using namespace gtl;

namespace {

constexpr int kSteps = 6;

train::TrainerOptions options() {
  train::TrainerOptions o;
  o.model.hidden = 16;
  o.model.blocks = 1;
  o.batch_size = 24;      // global: 12 per rank at N = 2, 8 at N = 3
  o.max_grad_norm = 1.f;  // clipping active: it must see the averaged gradient
  o.lr = 2e-3f;
  o.prefetch = 1;
  return o;
}

std::shared_ptr<data::SyntheticDigits> digits() {
  return std::make_shared<data::SyntheticDigits>(240, data::Split::Train, 3);
}

// Per step: the loss of this process (or rank) and its float32 weights after the update.
struct Trajectory {
  std::vector<float> losses;
  std::vector<float> grad_norms;  // before clipping
  std::vector<std::vector<float>> weights;
  std::vector<std::vector<float>> grads;
};

Trajectory train_single() {
  train::Trainer t(options(), digits());
  Trajectory out;
  for (int s = 0; s < kSteps; ++s) {
    const train::StepStats stats = t.step();
    out.losses.push_back(stats.loss);
    out.grad_norms.push_back(stats.grad_norm);
    out.weights.push_back(t.parameters().values().to_vector());
    out.grads.push_back(t.parameters().grads().to_vector());
  }
  return out;
}

std::vector<Trajectory> train_ranks(int world_size) {
  std::vector<Trajectory> out(static_cast<std::size_t>(world_size));
  auto data = digits();
  dist::run_ranks(world_size, [&](dist::Communicator& comm) {
    train::TrainerOptions o = options();
    o.rank = comm.rank();
    o.world_size = comm.world_size();
    o.grad_sync = [&comm](nn::ParameterBuffer& buffer) {
      comm.all_reduce(buffer.grads(), dist::ReduceOp::Avg);
    };
    train::Trainer t(o, data);
    Trajectory& mine = out[static_cast<std::size_t>(comm.rank())];
    for (int s = 0; s < kSteps; ++s) {
      const train::StepStats stats = t.step();
      mine.losses.push_back(stats.loss);
      mine.grad_norms.push_back(stats.grad_norm);
      mine.weights.push_back(t.parameters().values().to_vector());
      mine.grads.push_back(t.parameters().grads().to_vector());
    }
  });
  return out;
}

}  // namespace

// Tolerances, derived. The ranks compute the same mean gradient as one process, summed in another
// order: the single process sums B = 24 rows in its GEMMs (scaled by 1/24), a rank sums 24/N rows
// (scaled by N/24) and the all-reduce adds N partial means and divides by N. Reordering a float32
// sum of n terms changes it by at most about n * 2^-24 times the sum of the terms' magnitudes, so
// with n <= 24 by ~1e-6 of the largest gradient (measured: 3e-7 at step 0, 2e-5 by step 6,
// once the weights differ a little). Hence the gradient check: atol 1e-4 x max |g|.
// AdamW turns g into an update lr * m / (sqrt(v) + eps): from the second step on, m and v mix
// several steps' gradients, so an absolute error e of g moves the update by about lr * e / |g|
// (no longer damped by eps). With e ~ 3e-7 x max |g| (above), the update moves by less than the
// weight tolerance atol 2e-6 (1e-3 of one AdamW step) only where |g| > lr * e / atol = 3e-4 x
// max |g|; where the batch's contributions cancel below that (with a factor 3 of margin: 1e-3 x
// max |g|), the rounding of the sum is a large part of the gradient and the update may move by up
// to lr (measured: a weight of the first Linear with gradient 1e-9 moved 1.1e-4 = 0.05 lr; with
// one BLAS thread, another with |g| ~ 2e-4 x max moved 3.8e-6). So the weights must match to atol
// 2e-6, rtol 1e-5, except those whose gradient fell below 1e-3 x max |g| at some step so far,
// which may differ by lr per such step. A mis-sharded sample, a gradient not averaged (off by N) or
// clipped before the sync (another norm) misses these bounds by whole steps across most weights.
// The losses are means over the same 24 samples: the mean of the ranks' means equals the global
// mean up to float32 rounding (and the tiny weight differences): rtol 1e-5.
constexpr double kGradAtolOfMax = 1e-4;
constexpr gtl::testing::Tolerance kWeightTol{2e-6, 1e-5};
constexpr double kTinyGradOfMax = 1e-3;
constexpr double kLossRtol = 1e-5;

TEST(TrainerRanks, RanksReproduceOneProcessOnTheGlobalBatch) {
  const Trajectory single = train_single();
  const float lr = options().lr;
  for (float norm : single.grad_norms) {
    ASSERT_GT(norm, options().max_grad_norm) << "the test needs clipping active at every step, "
                                             << "so that syncing after clipping would show";
  }
  for (int world : {2, 3}) {
    const std::vector<Trajectory> ranks = train_ranks(world);
    std::vector<int> tiny_steps(single.weights[0].size(), 0);  // steps with a tiny |g|
    for (std::size_t s = 0; s < kSteps; ++s) {
      double mean_loss = 0;
      for (const Trajectory& r : ranks) mean_loss += r.losses[s];
      mean_loss /= world;
      const double expected = single.losses[s];
      EXPECT_TRUE(std::fabs(mean_loss - expected) <= kLossRtol * std::fabs(expected))
          << "N=" << world << " step " << s << ": the mean of the ranks' losses " << mean_loss
          << " must equal the single process's loss on the global batch " << expected
          << " (each rank must see its disjoint shard of the same global batch)";
      // The norm clipping saw: AdamW and clipping both hide a gradient off by a constant factor
      // (a sum instead of a mean scales every update alike), but the pre-clipping norm shows it.
      EXPECT_TRUE(std::fabs(ranks[0].grad_norms[s] - single.grad_norms[s]) <=
                  kGradAtolOfMax * single.grad_norms[s])
          << "N=" << world << " step " << s << ": the global gradient norm before clipping is "
          << ranks[0].grad_norms[s] << ", one process has " << single.grad_norms[s]
          << ": grad_sync must AVERAGE the ranks' gradients (a sum is N times too large)";
      const std::vector<float>& g = single.grads[s];
      double max_g = 0;
      for (float v : g) max_g = std::max(max_g, static_cast<double>(std::fabs(v)));
      const std::string gerr =
          gtl::testing::compare(ranks[0].grads[s], g, {kGradAtolOfMax * max_g, 0});
      EXPECT_TRUE(gerr.empty()) << "N=" << world << " step " << s << ": the averaged gradient "
                                << "(after clipping) must be the global batch's: " << gerr;
      const std::vector<float>& w = ranks[0].weights[s];
      const std::vector<float>& w1 = single.weights[s];
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (std::fabs(g[i]) < kTinyGradOfMax * max_g) ++tiny_steps[i];
        const double tol = tiny_steps[i] > 0 ? lr * tiny_steps[i]
                                             : kWeightTol.atol + kWeightTol.rtol * std::fabs(w1[i]);
        ASSERT_TRUE(std::fabs(w[i] - w1[i]) <= tol)
            << "N=" << world << " step " << s << ", weight " << i << ": rank 0 has " << w[i]
            << ", one process on the global batch " << w1[i] << " (tolerance " << tol
            << "): the gradients must be averaged over the ranks' shards before unscale and "
            << "clipping";
      }
    }
  }
}

// Every rank applies the same averaged gradient with the same clipping: the weights are bitwise
// identical across ranks after every step, with no broadcast.
TEST(TrainerRanks, EveryRankHoldsBitwiseIdenticalWeightsAfterEveryStep) {
  const std::vector<Trajectory> ranks = train_ranks(3);
  for (int s = 0; s < kSteps; ++s) {
    for (std::size_t r = 1; r < ranks.size(); ++r) {
      const std::string err =
          gtl::testing::compare(ranks[r].weights[static_cast<std::size_t>(s)],
                                ranks[0].weights[static_cast<std::size_t>(s)], {0, 0});
      EXPECT_TRUE(err.empty()) << "step " << s << ": rank " << r << " differs from rank 0: " << err;
    }
    EXPECT_NE(ranks[0].losses[static_cast<std::size_t>(s)],
              ranks[1].losses[static_cast<std::size_t>(s)])
        << "step " << s << ": two ranks with the same loss suggest they read the same shard";
  }
}

TEST(TrainerRanks, BatchMustSplitAcrossRanksAndRankMustBeInRange) {
  train::TrainerOptions o = options();
  o.world_size = 5;  // 24 % 5 != 0
  EXPECT_THROW(train::Trainer(o, digits()), Error);
  o.world_size = 2;
  o.rank = 2;
  EXPECT_THROW(train::Trainer(o, digits()), Error);
}

// The shards depend on world_size, so a checkpoint only resumes a run with the same world size.
TEST(TrainerRanks, CheckpointRecordsTheWorldSize) {
  train::TrainerOptions o = options();
  o.world_size = 2;
  train::Trainer two(o, digits());
  const std::string path = ::testing::TempDir() + "/ranks_test_world2.ckpt";
  two.save(path);
  train::Trainer one(options(), digits());
  try {
    one.load(path);
    FAIL() << "loading a world_size 2 checkpoint into a single-process trainer must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("world_size"), std::string::npos) << e.what();
  }
  o.rank = 1;
  train::Trainer other_rank(o, digits());
  EXPECT_NO_THROW(other_rank.load(path)) << "every rank loads rank 0's checkpoint";
  std::remove(path.c_str());
}
