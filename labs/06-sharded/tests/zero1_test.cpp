// TODO 2: ZeRO-1. It trains bit for bit like DDP (deterministic reductions, N = 1..5: 5 does not
// divide the parameter count), each rank keeps AdamW's state for its shard only (exact bytes from
// the rank's allocator), and one step moves exactly what DDP's all-reduce moves. The checks are
// zero_stage_checks.h's, shared with ZeRO-2; what is ZeRO-1's own is below.
#include <gtest/gtest.h>

#include "zero_stage_checks.h"

namespace lab06 {
namespace {

const testing::ZeroStage kZero1{
    Stage::Zero1,
    "ZeRO-1",
    "Revisit the step (handout, TODO 2): which collective hands each rank one averaged chunk, "
    "where shard_param()'s gradient reads it, and what every rank needs before the next forward",

    "4P (values) + 4P (gradients) + 4P/N (the values' shard) + 8 bytes (m, v) per REAL element of "
    "the rank's shard",
    "An optimizer over the whole model holds 8P; one over the padding too holds 8 bytes per "
    "padding element",
    "needs only its chunk of the averaged gradient, and an all-reduce hands every rank all of "
    "it (revisit the handout's ZeRO-1 and lab 05's ring)",
};

TEST(Zero1, TrainsBitForBitLikeDdpOnOneToFiveRanks) {
  testing::expect_trains_like_ddp_on_one_to_five_ranks(kZero1);
}

TEST(Zero1, KeepsOptimizerStateForItsShardOnly) {
  testing::expect_its_persistent_bytes_on_one_to_five_ranks(kZero1);
}

TEST(Zero1, MovesExactlyWhatDdpMovesPerStep) {
  testing::expect_ddp_traffic_on_two_three_five_ranks(kZero1);
}

// The same three properties on a seeded model (width, depth, weights), data seed and world size.
TEST(Zero1, TrainsBitForBitLikeDdpOnASeededModelAndData) {
  testing::expect_trains_like_ddp_on_a_seeded_run(kZero1);
}

TEST(Zero1, KeepsOptimizerStateForItsShardOnlyOnASeededModel) {
  testing::expect_its_persistent_bytes_on_a_seeded_run(kZero1);
}

TEST(Zero1, MovesExactlyWhatDdpMovesPerStepOnASeededModel) {
  testing::expect_ddp_traffic_on_a_seeded_run(kZero1);
}

}  // namespace
}  // namespace lab06
