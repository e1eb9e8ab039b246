// TODO 3: ZeRO-2. It trains bit for bit like DDP (deterministic reductions, N = 1..5: 5 does not
// divide the parameter count), each rank keeps only its shards of the gradients and of AdamW's
// state (exact bytes from the rank's allocator), and one step moves exactly what DDP's all-reduce
// moves. The checks are zero_stage_checks.h's, shared with ZeRO-1; what is ZeRO-2's own is below.
#include <gtest/gtest.h>

#include "zero_stage_checks.h"

namespace lab06 {
namespace {

const testing::ZeroStage kZero2{
    Stage::Zero2,
    "ZeRO-2",
    "Reduce-scatter (Avg) the full gradient into shard_grads(), step AdamW on shard_param(), then "
    "all-gather shard_values() into values()",
    "4P (values) + 4P/N (the values' shard) + 4P/N (the gradients' shard) + 8 bytes (m, v) per "
    "REAL element of the rank's shard",
    "A full gradient kept between steps holds 4P more: release it after the reduce-scatter; an "
    "optimizer over the padding holds 8 bytes per padding element",
    "keeps only its shard of the averaged gradient: a reduce-scatter, not an all-reduce",
};

TEST(Zero2, TrainsBitForBitLikeDdpOnOneToFiveRanks) {
  testing::expect_trains_like_ddp_on_one_to_five_ranks(kZero2);
}

TEST(Zero2, KeepsOnlyItsShardOfGradientsAndOptimizerState) {
  testing::expect_its_persistent_bytes_on_one_to_five_ranks(kZero2);
}

TEST(Zero2, MovesExactlyWhatDdpMovesPerStep) {
  testing::expect_ddp_traffic_on_two_three_five_ranks(kZero2);
}

// The same three properties on a seeded model (width, depth, weights), data seed and world size.
TEST(Zero2, TrainsBitForBitLikeDdpOnASeededModelAndData) {
  testing::expect_trains_like_ddp_on_a_seeded_run(kZero2);
}

TEST(Zero2, KeepsOnlyItsShardOfGradientsAndOptimizerStateOnASeededModel) {
  testing::expect_its_persistent_bytes_on_a_seeded_run(kZero2);
}

TEST(Zero2, MovesExactlyWhatDdpMovesPerStepOnASeededModel) {
  testing::expect_ddp_traffic_on_a_seeded_run(kZero2);
}

}  // namespace
}  // namespace lab06
