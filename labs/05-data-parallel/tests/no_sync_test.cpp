// TODO 6: k micro-batches, one all-reduce per optimizer step. Gradients of each micro-batch are
// small integers here (set by hand through the flat buffer), so the expected result is exact.
#include <gtest/gtest.h>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/nn/models.h"
#include "gtl/ops/elementwise.h"
#include "gtl_judge_output.h"
#include "lab05_cases.h"
#include "lab05_test_util.h"
#include "weighted_communicator.h"

namespace lab05 {
namespace {

// Micro-batch m's gradient on rank r, element i: an integer (lab05_cases.h, shared with the judge).
using lab05_cases::micro_grad;

TEST(NoSync, GradModeOfEachMicroBatch) {
  // One rank, so the step's result is the sum of its micro-batches whatever the sync does; the
  // gradients start as last step's (1000 everywhere): the caller never zeroes them.
  for (const int64_t k : {int64_t{1}, int64_t{3}}) {
    gtl::dist::run_ranks(
        1,
        [k](Communicator& comm) {
          auto model = gtl::nn::make_model(lab_model());
          gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
          const int64_t n = buffer.grads().numel();
          Tensor(buffer.grads()).copy_(Tensor::full({n}, 1000.0));
          NoSyncAccumulator acc(comm, buffer, k);
          std::vector<float> expected(static_cast<std::size_t>(n), 0.0f);
          for (int64_t m = 0; m < k; ++m) {
            std::vector<float> g(static_cast<std::size_t>(n));
            for (int64_t i = 0; i < n; ++i) {
              g[i] = micro_grad(0, m, i);
              expected[i] += g[i];
            }
            const Tensor gm = Tensor::from_vector(g, {n});
            // What a backward with GradMode acc.mode(m) does to the flat gradient.
            if (acc.mode(m) == gtl::nn::GradMode::Overwrite) {
              Tensor(buffer.grads()).copy_(gm);
            } else {
              gtl::ops::add_(buffer.grads(), gm);
            }
            acc.after_backward(m);
          }
          EXPECT_EQ(testing::bitwise_diff(buffer.grads().to_vector(), expected), "")
              << "k = " << k << " micro-batches on one rank, over last step's gradients (1000 "
              << "everywhere): expected the sum of the step's k micro-batch gradients, nothing "
              << "else. Revisit what the gradients hold when each micro-batch's backward runs, "
              << "and what the step must leave in them";
        },
        testing::fast());
  }
}

// What a backward with GradMode acc.mode(m) does to the flat gradient: micro-batch m's gradient
// on this rank (micro_grad) overwrites it or is added to it.
void backward_of(const NoSyncAccumulator& acc, const gtl::nn::ParameterBuffer& buffer, int rank,
                 int64_t m) {
  const int64_t n = buffer.grads().numel();
  std::vector<float> g(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) g[std::size_t(i)] = micro_grad(rank, m, i);
  const Tensor gm = Tensor::from_vector(g, {n});
  if (acc.mode(m) == gtl::nn::GradMode::Overwrite) {
    Tensor(buffer.grads()).copy_(gm);
  } else {
    gtl::ops::add_(buffer.grads(), gm);
  }
}

TEST(NoSync, OneAllReduceOfTheAccumulatedGradientPerStep) {
  const int world = 3;
  const int64_t k = 4, steps = 2;
  gtl::dist::run_ranks(
      world,
      [&](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
        const int64_t n = buffer.grads().numel();
        Tensor(buffer.grads())
            .copy_(Tensor::full({n}, 1000.0));  // what the last step left in the gradients
        NoSyncAccumulator acc(comm, buffer, k);
        gtl::judge::Outputs recorded("NoSync.OneAllReduceOfTheAccumulatedGradientPerStep.rank" +
                                     std::to_string(comm.rank()));
        for (int64_t step = 0; step < steps; ++step) {
          const int64_t before = comm.counters("all_reduce").calls;
          for (int64_t m = 0; m < k; ++m) {
            backward_of(acc, buffer, comm.rank(), m);
            acc.after_backward(m);
          }
          const int64_t calls = comm.counters("all_reduce").calls - before;
          EXPECT_EQ(calls, 1) << "step " << step << " (" << k << " micro-batches): its "
                              << "after_backward calls issued " << calls << " all-reduce(s), "
                              << "expected 1 in all. Revisit the bytes no_sync saves";
          const std::vector<float> expected = lab05_cases::no_sync_expected(world, k, n);
          const std::vector<float> synced = buffer.grads().to_vector();
          recorded.record_digest(synced.data(), synced.size());
          EXPECT_EQ(testing::bitwise_diff(buffer.grads().to_vector(), expected), "")
              << "step " << step << ", rank " << comm.rank() << ": after " << k << " micro-batches "
              << "the gradient is the average over ranks of the SUM over micro-batches";
        }
        EXPECT_EQ(comm.counters("all_reduce").calls, steps)
            << "one all-reduce round per " << k << " micro-batches";
        EXPECT_EQ(comm.total_counters().calls, steps) << "and no other communication";
        // Each of those all-reduces carries the whole flat gradient, n floats, over the whole world
        // (a 1-element all-reduce as a decoy, the gradient read from another
        // rank's memory, is not the sync).
        for (const gtl::dist::TraceEvent& e : comm.trace()->events("all_reduce")) {
          EXPECT_EQ(e.bytes, 4 * n)
              << "rank " << comm.rank() << ", all_reduce " << e.seq << ": expected the whole "
              << "accumulated flat gradient, " << n << " floats (" << 4 * n << " bytes), got "
              << e.bytes << " bytes: revisit what the last micro-batch all-reduces";
          EXPECT_EQ(e.group, (std::vector<int>{0, 1, 2})) << "over the whole world";
        }
      },
      testing::fast(/*deterministic=*/true));
}

// The step's gradient must be what its all-reduce returned: under a communicator whose all-reduce
// weighs rank r by w(r) = r + 1 (weighted_communicator.h), 4 ranks, k = 3 micro-batches, two
// steps: sum_r w(r) S_r / 4 where S_r is rank r's sum over micro-batches (exact: integers, / 4).
TEST(NoSync, TheGradientIsWhatTheAllReduceReturned) {
  constexpr int kWorld = 4;
  const int64_t k = 3, steps = 2;
  gtl::dist::run_ranks(
      kWorld,
      [&](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
        const int64_t n = buffer.grads().numel();
        testing::WeightedAllReduce weighted(comm);
        NoSyncAccumulator acc(weighted, buffer, k);
        std::vector<float> expected(static_cast<std::size_t>(n), 0.0f);
        for (int r = 0; r < kWorld; ++r) {
          for (int64_t m = 0; m < k; ++m) {
            for (int64_t i = 0; i < n; ++i) {
              expected[std::size_t(i)] +=
                  testing::WeightedAllReduce::weight(r) * micro_grad(r, m, i);
            }
          }
        }
        for (float& x : expected) x /= kWorld;
        for (int64_t step = 0; step < steps; ++step) {
          for (int64_t m = 0; m < k; ++m) {
            backward_of(acc, buffer, comm.rank(), m);
            acc.after_backward(m);
          }
          EXPECT_EQ(testing::bitwise_diff(buffer.grads().to_vector(), expected), "")
              << "step " << step << ", rank " << comm.rank() << ": this test's all-reduce "
              << "weighs rank r by r + 1, so the step's gradient must be sum_r (r + 1) S_r / 4 "
              << "(S_r: rank r's sum over its " << k << " micro-batches), what the collective "
              << "returned over the world size. A gradient made any other way (from other "
              << "ranks' tensors, from a copy taken before the all-reduce) is not the sync: "
              << "revisit where the all-reduce's result goes";
        }
      },
      testing::fast());
}

}  // namespace
}  // namespace lab05
