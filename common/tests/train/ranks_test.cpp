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
#include "gtl/optim/adamw.h"
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

// Per step: the loss of this process (or rank), its weights after the update and the gradient
// that update applied.
struct Trajectory {
  std::vector<float> initial_weights;
  std::vector<float> losses;
  std::vector<float> grad_norms;  // before clipping
  std::vector<std::vector<float>> weights;
  std::vector<std::vector<float>> grads;  // after clipping: what AdamW applied

  // The weights the step s started from.
  const std::vector<float>& weights_before(std::size_t s) const {
    return s == 0 ? initial_weights : weights[s - 1];
  }
};

// Runs kSteps steps of `t`, recording them. With `follow`, every step starts from the weights
// `follow` started that step from: the gradient, norm and loss recorded are then the ones this
// trainer computes at the other run's weights.
Trajectory record_steps(train::Trainer& t, const Trajectory* follow = nullptr) {
  Trajectory out;
  out.initial_weights = t.parameters().values().to_vector();
  for (std::size_t s = 0; s < static_cast<std::size_t>(kSteps); ++s) {
    if (follow != nullptr) {
      Tensor values = t.parameters().values();
      values.copy_(Tensor::from_vector(follow->weights_before(s), values.shape()));
    }
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
  dist::RunOptions run;
  // Sums in rank order: without it the all-reduce adds in arrival order, which changes from run
  // to run with the machine's load.
  run.deterministic = true;
  dist::run_ranks(
      world_size,
      [&](dist::Communicator& comm) {
        train::TrainerOptions o = options();
        o.rank = comm.rank();
        o.world_size = comm.world_size();
        o.grad_sync = [&comm](nn::ParameterBuffer& buffer) {
          comm.all_reduce(buffer.grads(), dist::ReduceOp::Avg);
        };
        train::Trainer t(o, data);
        out[static_cast<std::size_t>(comm.rank())] = record_steps(t);
      },
      run);
  return out;
}

// AdamW exactly as update_rules.h writes it, in float64, on a recorded gradient sequence from
// the recorded initial weights: per step, the weights exact arithmetic gives, and the bound on
// how far the float32 update code may round away from them (derived below).
struct ExactAdamW {
  std::vector<std::vector<double>> weights, rounding;
};

ExactAdamW adamw_in_float64(const Trajectory& run, double update_rel_rounding) {
  const optim::AdamWOptions defaults;
  const double lr = options().lr, wd = options().weight_decay;
  const double b1 = defaults.beta1, b2 = defaults.beta2, eps = defaults.eps;
  const std::size_t n = run.initial_weights.size();
  std::vector<double> w(run.initial_weights.begin(), run.initial_weights.end());
  std::vector<double> m(n, 0), v(n, 0), rounding(n, 0);
  ExactAdamW out;
  for (std::size_t t = 1; t <= run.grads.size(); ++t) {
    const double step_size = lr / (1 - std::pow(b1, static_cast<double>(t)));
    const double bc2_sqrt = std::sqrt(1 - std::pow(b2, static_cast<double>(t)));
    for (std::size_t i = 0; i < n; ++i) {
      const double g = run.grads[t - 1][i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double update = step_size * (m[i] / (std::sqrt(v[i]) / bc2_sqrt + eps));
      const double decay = lr * wd * w[i];
      w[i] = w[i] - decay - update;
      const float w32 = static_cast<float>(std::fabs(w[i]));
      const double ulp = std::nextafter(w32, INFINITY) - w32;
      rounding[i] += ulp + update_rel_rounding * (std::fabs(update) + std::fabs(decay));
    }
    out.weights.push_back(w);
    out.rounding.push_back(rounding);
  }
  return out;
}

}  // namespace

// What "the ranks reproduce one process" means, checked so that it holds for any order in which
// the BLAS and the all-reduce sum (OpenBLAS picks its kernels by CPU):
//
// 1. At every step, rank 0's averaged, clipped gradient (and the norm clipping saw, and the mean
//    of the ranks' losses) is one process's on the global batch AT THE SAME WEIGHTS. The test
//    runs one process that starts each step from the weights rank 0 started it from: comparing
//    two free-running trajectories would also compare what AdamW makes of rounding, and AdamW's
//    first step moves every weight by lr * sign(g), so a gradient whose sign the summation order
//    flips moves its weight by 2 lr (measured: gradients of free-running trajectories 4.9e-5 x
//    max |g| apart by step 5 with one BLAS kernel, 5e-6 with another).
//    At the same weights the two differ only by the order of their sums: one process sums B = 24
//    rows in its GEMMs (scaled by 1/24), a rank sums 24/N rows (scaled by N/24) and the
//    all-reduce adds N partial means and divides by N. Reordering a float32 sum of n terms moves
//    it by at most about n * 2^-24 = 1.4e-6 (n = 24) of the sum of the terms' magnitudes; the
//    terms of a gradient element are of the order of the largest gradient, so atol 1e-5 x max |g|
//    (measured, every OpenBLAS kernel type this CPU runs, 1 and 2 BLAS threads: at most 5e-7).
//    The same relative bound holds for the global norm, and for the loss, a mean of the same 24
//    per-sample losses.
// 2. At every step, rank 0's weights are AdamW applied exactly to its own gradients, up to the
//    float32 rounding of its own updates: the update code rounds the weight (<= 1 ulp with the
//    decay) and computes the update to a relative (3t + 5) * 2^-24 (m, v and the scalars carry t
//    steps of rounding; sqrt, division and products one each): with t <= 6, 32 * 2^-24 covers it.
//    A rank that applies another update than its gradient calls for (skipped, doubled, another
//    learning rate, a gradient other than the synced one) misses this by a whole update.
// Together: rank 0 trains exactly as one process on the global batch would, rounding aside.
// A mis-sharded sample, a gradient not averaged (off by N) or clipped before the sync (another
// norm) misses bound 1 by orders of magnitude.
constexpr double kSumOrderRel = 1e-5;
constexpr double kUpdateRelRounding = 32.0 / (1 << 24);

TEST(TrainerRanks, RanksReproduceOneProcessOnTheGlobalBatch) {
  for (int world : {2, 3}) {
    const std::vector<Trajectory> ranks = train_ranks(world);
    const Trajectory& rank0 = ranks[0];
    train::Trainer one_process(options(), digits());
    const Trajectory single = record_steps(one_process, &rank0);
    ASSERT_EQ(gtl::testing::compare(rank0.initial_weights, single.initial_weights, {0, 0}), "")
        << "N=" << world << ": every rank must start from one process's initial weights";
    const ExactAdamW exact = adamw_in_float64(rank0, kUpdateRelRounding);
    for (std::size_t s = 0; s < static_cast<std::size_t>(kSteps); ++s) {
      ASSERT_GT(single.grad_norms[s], options().max_grad_norm)
          << "the test needs clipping active at every step, so that syncing after clipping "
          << "would show";
      double mean_loss = 0;
      for (const Trajectory& r : ranks) mean_loss += r.losses[s];
      mean_loss /= world;
      const double expected = single.losses[s];
      EXPECT_TRUE(std::fabs(mean_loss - expected) <= kSumOrderRel * std::fabs(expected))
          << "N=" << world << " step " << s << ": the mean of the ranks' losses " << mean_loss
          << " must equal one process's loss on the global batch " << expected
          << " (each rank must see its disjoint shard of the same global batch)";
      // The norm clipping saw: AdamW and clipping both hide a gradient off by a constant factor
      // (a sum instead of a mean scales every update alike), but the pre-clipping norm shows it.
      EXPECT_TRUE(std::fabs(rank0.grad_norms[s] - single.grad_norms[s]) <=
                  kSumOrderRel * single.grad_norms[s])
          << "N=" << world << " step " << s << ": the global gradient norm before clipping is "
          << rank0.grad_norms[s] << ", one process has " << single.grad_norms[s]
          << ": grad_sync must AVERAGE the ranks' gradients (a sum is N times too large)";
      const std::vector<float>& g = single.grads[s];
      double max_g = 0;
      for (float v : g) max_g = std::max(max_g, static_cast<double>(std::fabs(v)));
      const std::string gerr = gtl::testing::compare(rank0.grads[s], g, {kSumOrderRel * max_g, 0});
      EXPECT_TRUE(gerr.empty()) << "N=" << world << " step " << s << ": the averaged gradient "
                                << "(after clipping) must be the global batch's: " << gerr;
      const std::vector<float>& w = rank0.weights[s];
      for (std::size_t i = 0; i < w.size(); ++i) {
        ASSERT_TRUE(std::fabs(w[i] - exact.weights[s][i]) <= exact.rounding[s][i])
            << "N=" << world << " step " << s << ", weight " << i << ": rank 0 has " << w[i]
            << ", but AdamW applied exactly to its gradients gives " << exact.weights[s][i]
            << " (+- " << exact.rounding[s][i] << " of float32 rounding): each rank must apply "
            << "exactly the update its averaged, clipped gradient calls for";
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
