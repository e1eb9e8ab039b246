// TODO 2: the distributed sampler and the broadcast of the initial weights. The sampler's
// properties: the shards of one epoch hold the world-1 order padded with its first indices, each
// rank starting at its position, the order is a function of (seed, epoch) only, and epochs
// differ (the judge compares every seeded shard exactly).
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/nn/models.h"
#include "gtl_judge_output.h"
#include "lab05_cases.h"
#include "lab05_student_call.h"
#include "lab05_test_util.h"

namespace lab05 {
namespace {

// The student's sampler inside TODO 2's guard scope (lab05_student_call.h).
std::vector<int64_t> shard(int64_t dataset_size, int rank, int world_size, uint64_t seed,
                           int64_t epoch) {
  const auto call = lab05_student_call::todo2();
  return shard_indices(dataset_size, rank, world_size, seed, epoch);
}

std::string str(const std::vector<int64_t>& v) {
  std::ostringstream s;
  for (std::size_t i = 0; i < v.size() && i < 12; ++i) s << (i ? " " : "") << v[i];
  if (v.size() > 12) s << " ...";
  return s.str();
}

// The shards of one epoch against the world-1 `order`, by the header's properties: every rank
// has ceil(size/W) indices, rank r's first is position r of the padded order, and together the
// shards hold the padded order's indices (the permutation, then its first indices repeated up
// to ceil(size/W)*W), each as often as it appears there. (The judge compares every shard
// exactly.)
void expect_shards_cover_the_padded_order(const std::vector<int64_t>& order,
                                          const std::vector<std::vector<int64_t>>& shards,
                                          const std::string& where) {
  const int64_t size = int64_t(order.size()), world = int64_t(shards.size());
  const int64_t per_rank = (size + world - 1) / world;
  std::vector<int64_t> all, padded;
  for (int64_t k = 0; k < per_rank * world; ++k) padded.push_back(order[std::size_t(k % size)]);
  for (int64_t r = 0; r < world; ++r) {
    const std::vector<int64_t>& mine = shards[std::size_t(r)];
    ASSERT_EQ(int64_t(mine.size()), per_rank)
        << where << ", rank " << r << " of " << world << ": expected " << per_rank
        << " indices (every rank the same number), got " << mine.size();
    EXPECT_EQ(mine.front(), padded[std::size_t(r)])
        << where << ", rank " << r << " of " << world << ": got [" << str(mine) << "], whose "
        << "first index is not position " << r << " of the epoch's order [" << str(order) << "]";
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::sort(all.begin(), all.end());
  std::sort(padded.begin(), padded.end());
  EXPECT_EQ(all, padded) << where << ", " << world << " ranks: the shards together do not hold "
                         << "the padded order's indices, each as often as it appears there "
                         << "(the epoch's ONE shared order, the same on every rank)";
}

TEST(DistributedSampler, OneRankVisitsAPermutationOfTheDataset) {
  for (int64_t size : {1, 7, 50, 101}) {
    std::vector<int64_t> order = shard(size, 0, 1, 3, 0);
    ASSERT_EQ(int64_t(order.size()), size) << "world_size 1: every sample once per epoch";
    std::sort(order.begin(), order.end());
    for (int64_t i = 0; i < size; ++i) {
      ASSERT_EQ(order[i], i) << "dataset of " << size << ": the epoch must visit each index "
                             << "0.." << size - 1 << " exactly once (a permutation)";
    }
  }
}

TEST(DistributedSampler, ShardsInterleaveIntoTheSharedOrderPaddedWithItsFirstIndices) {
  for (int64_t size : {12, 50, 7, 3}) {
    for (int world : {2, 3, 4, 5}) {
      for (int64_t epoch : {0, 1}) {
        const std::vector<int64_t> order = shard(size, 0, 1, 9, epoch);
        ASSERT_EQ(int64_t(order.size()), size) << "world_size 1: the epoch's whole order";
        std::vector<std::vector<int64_t>> shards;
        for (int r = 0; r < world; ++r) shards.push_back(shard(size, r, world, 9, epoch));
        expect_shards_cover_the_padded_order(
            order, shards, "dataset " + std::to_string(size) + ", epoch " + std::to_string(epoch));
      }
    }
  }
}

TEST(DistributedSampler, TheOrderDependsOnSeedAndEpochOnly) {
  EXPECT_EQ(shard(50, 1, 3, 7, 2), shard(50, 1, 3, 7, 2))
      << "the same (seed, epoch) must give the same shard: every rank computes it on its own";
  EXPECT_NE(shard(50, 0, 1, 7, 0), shard(50, 0, 1, 7, 1))
      << "each epoch must be reshuffled (epoch 0 and epoch 1 gave the same order)";
  EXPECT_NE(shard(50, 0, 1, 7, 0), shard(50, 0, 1, 8, 0)) << "the seed must change the order";
  // Other pairs, other orders: a mix of seed and epoch that confuses two pairs replays one run's
  // epochs in another (seed 8's epoch 1 would be seed 7's epoch 2).
  for (const auto& [seed, epoch] :
       std::vector<std::pair<uint64_t, int64_t>>{{2, 7}, {8, 1}, {6, 3}})
    EXPECT_NE(shard(50, 0, 1, 7, 2), shard(50, 0, 1, seed, epoch))
        << "seed 7, epoch 2 and seed " << seed << ", epoch " << epoch
        << " gave the same order: revisit how the generator's seed mixes the two numbers (TODO 2)";
  std::vector<int64_t> identity(50);
  for (int64_t i = 0; i < 50; ++i) identity[i] = i;
  EXPECT_NE(shard(50, 0, 1, 7, 0), identity) << "the epoch's order must be shuffled";
}

// Sizes, world sizes, seeds and epochs drawn from the grading seed: each shard must be the
// interleaving of the world-1 order, padded with its first indices. The shards go to the judge.
TEST(DistributedSampler, SeededShardsInterleaveTheSharedOrder) {
  gtl::judge::Outputs recorded("DistributedSampler.SeededShardsInterleaveTheSharedOrder");
  for (const lab05_cases::SamplerCase& c : lab05_cases::seeded_sampler_cases()) {
    const std::vector<int64_t> order = shard(c.size, 0, 1, c.seed, c.epoch);
    recorded.record_all(order);
    std::vector<std::vector<int64_t>> shards;
    for (int r = 0; r < c.world; ++r) {
      shards.push_back(shard(c.size, r, c.world, c.seed, c.epoch));
      recorded.record_all(shards.back());
    }
    expect_shards_cover_the_padded_order(
        order, shards,
        "dataset " + std::to_string(c.size) + ", seed " + std::to_string(c.seed) + ", epoch " +
            std::to_string(c.epoch) + " (" + gtl::test_seed::describe() + ")");
  }
}

TEST(BroadcastParameters, EveryRankHoldsTheRootsInitialWeightsBitForBit) {
  const uint64_t base = lab05_cases::broadcast_base_seed();  // drawn from the grading seed
  gtl::judge::Outputs recorded("BroadcastParameters.EveryRankHoldsTheRootsInitialWeightsBitForBit");
  for (int root : {0, 2}) {
    std::vector<std::vector<float>> got(3);
    gtl::dist::run_ranks(
        3,
        [&](Communicator& comm) {
          gtl::nn::ModelConfig config = lab_model();
          config.seed = base + static_cast<uint64_t>(comm.rank());  // different weights per rank
          auto model = gtl::nn::make_model(config);
          broadcast_parameters(comm, model->parameters(), root);
          // The weights alone cannot tell a broadcast from a copy read through memory the ranks
          // share (they are threads): every rank but the root receives every parameter's bytes
          // (lab05_test_util.h derives it), the root none. BroadcastProcesses.*
          // (mpi_launch_test.cpp) runs it on three processes, which share no memory.
          int64_t param_bytes = 0;
          for (const ParamRef& p : model->parameters()) param_bytes += int64_t(p.value.nbytes());
          EXPECT_EQ(testing::broadcast_traffic_problem(comm, root, param_bytes), "");
          std::vector<float> all;
          for (const ParamRef& p : model->parameters()) {
            const std::vector<float> v = p.value.to_vector();
            all.insert(all.end(), v.begin(), v.end());
          }
          got[comm.rank()] = all;
        },
        testing::fast());
    const std::vector<float> expected = lab05_cases::initial_weights(base + uint64_t(root));
    for (int r = 0; r < 3; ++r) {
      recorded.record_digest(got[r].data(), got[r].size());
      EXPECT_EQ(testing::bitwise_diff(got[r], expected), "")
          << "root " << root << ", rank " << r << ": after broadcast_parameters every rank holds "
          << "the root's initial weights (every parameter, bit for bit)";
    }
  }
}

}  // namespace
}  // namespace lab05
