// TODO 2: the distributed sampler and the broadcast of the initial weights. The sampler's
// properties are checked exactly: the shards of one epoch interleave into the world-1 order padded
// with its first indices, the order is a function of (seed, epoch) only, and epochs differ.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <sstream>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/nn/models.h"
#include "gtl_judge_output.h"
#include "lab05_cases.h"
#include "lab05_student_call.h"
#include "lab05_test_util.h"

namespace lab05 {
namespace {

// The student's sampler inside TODO 2a's guard scope (lab05_student_call.h).
std::vector<int64_t> shard(int64_t dataset_size, int rank, int world_size, uint64_t seed,
                           int64_t epoch) {
  const auto call = lab05_student_call::todo2a();
  return shard_indices(dataset_size, rank, world_size, seed, epoch);
}

std::string str(const std::vector<int64_t>& v) {
  std::ostringstream s;
  for (std::size_t i = 0; i < v.size() && i < 12; ++i) s << (i ? " " : "") << v[i];
  if (v.size() > 12) s << " ...";
  return s.str();
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
        const int64_t per_rank = (size + world - 1) / world;
        for (int r = 0; r < world; ++r) {
          const std::vector<int64_t> mine = shard(size, r, world, 9, epoch);
          std::vector<int64_t> expected;
          for (int64_t k = r; k < per_rank * world; k += world) expected.push_back(order[k % size]);
          EXPECT_EQ(mine, expected)
              << "dataset " << size << ", rank " << r << " of " << world << ", epoch " << epoch
              << ": got [" << str(mine) << "], expected [" << str(expected) << "]: rank r takes "
              << "positions r, r+W, ... of the epoch's ONE shared order (the same on every rank), "
              << "padded by repeating its first indices to ceil(size/W)*W positions";
        }
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
        << " gave the same order: revisit how the generator's seed mixes the two numbers (TODO 2a)";
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
    const int64_t per_rank = (c.size + c.world - 1) / c.world;
    for (int r = 0; r < c.world; ++r) {
      const std::vector<int64_t> mine = shard(c.size, r, c.world, c.seed, c.epoch);
      recorded.record_all(mine);
      std::vector<int64_t> expected;
      for (int64_t k = r; k < per_rank * c.world; k += c.world)
        expected.push_back(order[std::size_t(k % c.size)]);
      EXPECT_EQ(mine, expected) << "dataset " << c.size << ", rank " << r << " of " << c.world
                                << ", seed " << c.seed << ", epoch " << c.epoch << " ("
                                << gtl::test_seed::describe() << ")";
    }
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
