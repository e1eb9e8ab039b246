// TODO 2: ZeRO-1. It trains bit for bit like DDP (deterministic reductions, N = 1..5: 5 does not
// divide the parameter count), each rank keeps AdamW's state for its shard only (exact bytes from
// the rank's allocator), and one step moves exactly what DDP's all-reduce moves.
#include <gtest/gtest.h>

#include <iostream>

#include "lab06_cases.h"
#include "lab06_test_util.h"

namespace lab06 {
namespace {

using testing::bitwise_diff;

TEST(Zero1, TrainsBitForBitLikeDdpOnOneToFiveRanks) {
  gtl::judge::Outputs out("Zero1.TrainsBitForBitLikeDdpOnOneToFiveRanks");
  for (int n = 1; n <= 5; ++n) {
    const std::vector<TrainResult> ddp = testing::run(n, Stage::Ddp);
    const std::vector<TrainResult> zero = testing::run(n, Stage::Zero1);
    lab06_cases::record_runs(out, zero);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(bitwise_diff(zero[r].weights, ddp[r].weights), "")
          << "N " << n << ", rank " << r << ": ZeRO-1's weights after 3 steps differ from DDP's. "
          << "Reduce-scatter (Avg) the gradient into chunk r, step AdamW on shard_param(), then "
             "all-gather shard_values() into values()";
      EXPECT_EQ(bitwise_diff(zero[r].losses, ddp[r].losses), "") << "N " << n << ", rank " << r;
    }
  }
}

TEST(Zero1, KeepsOptimizerStateForItsShardOnly) {
  gtl::judge::Outputs out("Zero1.KeepsOptimizerStateForItsShardOnly");
  const int64_t p = testing::model_numel(lab_model());
  for (int n = 1; n <= 5; ++n) {
    const std::vector<TrainResult> zero = testing::run(n, Stage::Zero1);
    std::cout << "[ figures  ] " << stage_name(Stage::Zero1) << ", N " << n
              << ": persistent bytes rank 0 " << zero[0].persistent_bytes << ", peak "
              << zero[0].peak_bytes << "\n";
    for (int r = 0; r < n; ++r) {
      out.record(zero[r].persistent_bytes);
      const int64_t expected = expected_persistent_bytes(Stage::Zero1, {p}, n, r);
      EXPECT_EQ(zero[r].persistent_bytes, expected)
          << "N " << n << ", rank " << r << ": ZeRO-1 keeps 4P (values) + 4P (gradients) + "
          << "4P/N (the values' shard) + 8 bytes (m, v) per REAL element of the rank's shard "
          << "(P = " << p << " padded to a multiple of N); got " << zero[r].persistent_bytes
          << " bytes. An optimizer over the whole model holds 8P; one over the padding too "
             "holds 8 bytes per padding element";
    }
  }
}

TEST(Zero1, MovesExactlyWhatDdpMovesPerStep) {
  gtl::judge::Outputs out("Zero1.MovesExactlyWhatDdpMovesPerStep");
  const int64_t p = testing::model_numel(lab_model());
  for (int n : {2, 3, 5}) {
    const std::vector<TrainResult> zero = testing::run(n, Stage::Zero1);
    for (int r = 0; r < n; ++r) {
      lab06_cases::record_traffic(out, zero[r]);
      const auto& c = zero[r].step_counters;
      const auto calls = [&](const std::string& op) {
        return c.count(op) ? c.at(op).calls : int64_t{0};
      };
      EXPECT_EQ(calls("all_reduce"), 0) << "N " << n << ", rank " << r
                                        << ": ZeRO-1 needs only its chunk of the averaged "
                                           "gradient: a reduce-scatter, not an all-reduce";
      EXPECT_EQ(calls("reduce_scatter"), 1) << "N " << n << ", rank " << r << ": one per step";
      EXPECT_EQ(calls("all_gather"), 1) << "N " << n << ", rank " << r << ": one per step";
      int64_t sent = 0;
      for (const auto& [op, counters] : c) sent += counters.bytes_sent;
      EXPECT_EQ(sent, testing::ddp_bytes_sent({p}, n))
          << "N " << n << ", rank " << r << ": reduce-scatter + all-gather of the padded buffer "
          << "is what DDP's all-reduce moves, 2 (N-1) shards";
    }
  }
}

// The same three properties on a seeded model (width, depth, weights), data seed and world size.
TEST(Zero1, TrainsBitForBitLikeDdpOnASeededModelAndData) {
  const std::string test = "Zero1.TrainsBitForBitLikeDdpOnASeededModelAndData";
  gtl::judge::Outputs out(test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  const std::vector<TrainResult> ddp = testing::run(c.world, Stage::Ddp, c.config);
  const std::vector<TrainResult> zero = testing::run(c.world, Stage::Zero1, c.config);
  lab06_cases::record_runs(out, zero);
  for (int r = 0; r < c.world; ++r) {
    EXPECT_EQ(bitwise_diff(zero[r].weights, ddp[r].weights), "")
        << lab06_cases::describe(c) << ", rank " << r << ": ZeRO-1's weights differ from DDP's";
    EXPECT_EQ(bitwise_diff(zero[r].losses, ddp[r].losses), "")
        << lab06_cases::describe(c) << ", rank " << r << ": ZeRO-1's losses differ from DDP's";
  }
}

TEST(Zero1, KeepsOptimizerStateForItsShardOnlyOnASeededModel) {
  const std::string test = "Zero1.KeepsOptimizerStateForItsShardOnlyOnASeededModel";
  gtl::judge::Outputs out(test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  const int64_t p = testing::model_numel(c.config.model);
  const std::vector<TrainResult> zero = testing::run(c.world, Stage::Zero1, c.config);
  for (int r = 0; r < c.world; ++r) {
    out.record(zero[r].persistent_bytes);
    EXPECT_EQ(zero[r].persistent_bytes, expected_persistent_bytes(Stage::Zero1, {p}, c.world, r))
        << lab06_cases::describe(c) << ", rank " << r << " (P = " << p
        << "): persistent bytes differ from the ZeRO-1 formula";
  }
}

TEST(Zero1, MovesExactlyWhatDdpMovesPerStepOnASeededModel) {
  const std::string test = "Zero1.MovesExactlyWhatDdpMovesPerStepOnASeededModel";
  gtl::judge::Outputs out(test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  const int64_t p = testing::model_numel(c.config.model);
  const std::vector<TrainResult> zero = testing::run(c.world, Stage::Zero1, c.config);
  for (int r = 0; r < c.world; ++r) {
    lab06_cases::record_traffic(out, zero[r]);
    EXPECT_EQ(lab06_cases::calls(zero[r], "all_reduce"), 0) << lab06_cases::describe(c);
    EXPECT_EQ(lab06_cases::calls(zero[r], "reduce_scatter"), 1) << lab06_cases::describe(c);
    EXPECT_EQ(lab06_cases::calls(zero[r], "all_gather"), 1) << lab06_cases::describe(c);
    EXPECT_EQ(lab06_cases::bytes_sent(zero[r]), testing::ddp_bytes_sent({p}, c.world))
        << lab06_cases::describe(c) << ", rank " << r << " (P = " << p
        << "): one reduce-scatter + one all-gather of the padded buffer, 2 (N-1) shards";
  }
}

}  // namespace
}  // namespace lab06
