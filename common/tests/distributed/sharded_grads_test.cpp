// Sharded gradients must take the decisions unsharded ones would: the same skipped steps (one
// found-inf flag for the group) and the same clipping coefficient (the norm over all shards).
#include "gtl/distributed/sharded_grads.h"

#include <cmath>

#include "dist_test_util.h"
#include "gtl/optim/grad_clip.h"
#include "gtl/optim/sgd.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

// A gradient of n elements with magnitudes from 1e-3 to 1e2, as a flat float32 vector.
std::vector<float> full_gradient(int64_t n) {
  std::vector<float> g(n);
  for (int64_t i = 0; i < n; ++i)
    g[i] = static_cast<float>(std::pow(10.0, double(i % 6) - 3.0) * ((i % 3) - 1.0 + 0.25));
  return g;
}

// Rank r's shard of a flat vector of n elements: [r*n/N, (r+1)*n/N).
optim::ParamRef shard_param(const std::vector<float>& full, int rank, int world) {
  const int64_t n = static_cast<int64_t>(full.size());
  const int64_t begin = rank * n / world, end = (rank + 1) * n / world;
  std::vector<float> mine(full.begin() + begin, full.begin() + end);
  const int64_t len = end - begin;
  return optim::ParamRef{Tensor::zeros({len}), Tensor::from_vector(mine, {len}), Tensor(),
                         "shard" + std::to_string(rank)};
}

TEST(ShardedGrads, ClipByTheNormOfAllShards) {
  constexpr int64_t n = 1000;
  const std::vector<float> full = full_gradient(n);
  // The unsharded reference: clip the whole gradient at once.
  optim::ParamRef whole{Tensor::zeros({n}), Tensor::from_vector(full, {n}), Tensor(), "whole"};
  const float max_norm = 1.f;
  const float norm_ref = optim::clip_grad_norm_({whole}, max_norm).item();
  const std::vector<float> clipped_ref = whole.grad.to_vector();
  ASSERT_GT(norm_ref, 10 * max_norm) << "the test gradient must be large enough to be clipped";

  for (int world : {1, 2, 3, 5}) {
    run_ranks(world, [&](Communicator& comm) {
      optim::ParamRef p = shard_param(full, comm.rank(), world);
      const float norm = clip_grad_norm_({p}, max_norm, comm, Device::cpu()).item();
      // Per-rank squared norms are rounded to float32 before the sum: a relative error of about
      // N ulps of float32; with one rank it is exactly the unsharded computation.
      if (world == 1) {
        EXPECT_EQ(norm, norm_ref) << "a group of one must clip exactly as the unsharded code";
      } else {
        EXPECT_NEAR(norm, norm_ref, 1e-6 * norm_ref)
            << "world " << world << ", rank " << comm.rank()
            << ": the norm must be the GLOBAL norm over all shards, not this shard's";
      }
      const std::vector<float> got = p.grad.to_vector();
      const int64_t begin = comm.rank() * n / world;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const float want = clipped_ref[begin + i];
        ASSERT_NEAR(got[i], want, 1e-6f * std::fabs(want) + 1e-12f)
            << "world " << world << ", rank " << comm.rank() << ", element " << begin + i
            << ": every shard must be scaled by the same coefficient max_norm / global norm";
      }
    });
  }
}

TEST(ShardedGrads, ARankOwningNoGradientStillTakesPart) {
  // 2 elements over 3 ranks: rank 0 owns nothing (its shard is padding only in FSDP).
  const std::vector<float> full = {30.f, 40.f};
  run_ranks(3, [&](Communicator& comm) {
    std::vector<optim::ParamRef> mine;
    if (comm.rank() > 0) {
      mine.push_back(optim::ParamRef{Tensor::zeros({1}), Tensor::full({1}, full[comm.rank() - 1]),
                                     Tensor(), "p"});
    }
    const float norm = clip_grad_norm_(mine, 5.f, comm, Device::cpu()).item();
    EXPECT_FLOAT_EQ(norm, 50.f) << "the global norm of (30, 40) is 50 on every rank";
    if (!mine.empty()) {
      EXPECT_NEAR(mine[0].grad.item(), full[comm.rank() - 1] * 0.1f, 1e-4f)
          << "clipped to norm 5: each element scaled by 5/50";
    }
  });
}

TEST(ShardedGrads, EveryRankSkipsTheStepWhenAnyShardOverflowed) {
  for (int world : {2, 3}) {
    for (int bad_rank = 0; bad_rank < world; ++bad_rank) {
      run_ranks(world, [&](Communicator& comm) {
        optim::LossScaler scaler;  // fp16-style: enabled, scale 65536
        optim::ParamRef p{Tensor::ones({4}), Tensor::full({4}, 65536.0), Tensor(), "p"};
        if (comm.rank() == bad_rank) p.grad = Tensor::full({4}, INFINITY);
        optim::Sgd sgd({p}, optim::SgdOptions{});
        scaler.unscale_({p});
        all_reduce_found_inf(scaler, comm, Device::cpu());
        const bool stepped = scaler.step(sgd);
        scaler.update();
        EXPECT_FALSE(stepped) << "world " << world << ": rank " << bad_rank
                              << " saw an inf, so rank " << comm.rank()
                              << " must skip the step too (found-inf is a max over the group)";
        EXPECT_EQ(scaler.scale(), 32768.f)
            << "rank " << comm.rank() << ": every rank halves its scale on the same step";
        EXPECT_EQ(p.value.to_vector(), std::vector<float>(4, 1.f))
            << "a skipped step changes nothing";
      });
    }
  }
}

TEST(ShardedGrads, CleanShardsStepEverywhere) {
  run_ranks(3, [&](Communicator& comm) {
    optim::LossScaler scaler;
    optim::ParamRef p{Tensor::ones({4}), Tensor::full({4}, 65536.0), Tensor(), "p"};
    optim::SgdOptions o;
    o.lr = 0.5f;
    optim::Sgd sgd({p}, o);
    scaler.unscale_({p});
    all_reduce_found_inf(scaler, comm, Device::cpu());
    EXPECT_TRUE(scaler.step(sgd)) << "no rank overflowed: every rank steps";
    scaler.update();
    EXPECT_EQ(p.value.to_vector(), std::vector<float>(4, 0.5f)) << "1 - 0.5 * (65536 / 65536)";
  });
}

}  // namespace
}  // namespace gtl::dist
