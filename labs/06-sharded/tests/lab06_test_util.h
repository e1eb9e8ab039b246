// Helpers of lab 06's tests: runs of the harness on N in-process ranks (every rank's result kept),
// bitwise comparison of float vectors, and the units' sizes of the lab model.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "bitwise_diff.h"
#include "gtl/distributed/in_process.h"
#include "gtl/memory/allocator.h"
#include "sharded_training.h"

namespace lab06::testing {

inline gtl::dist::RunOptions fast(bool deterministic = true) {
  gtl::dist::RunOptions o;
  o.timeout = std::chrono::seconds(10);
  o.deterministic = deterministic;
  return o;
}

// train(comm, stage, config) on `world` ranks in the deterministic reduction mode, each rank with
// its own CPU allocator; result r is rank r's.
inline std::vector<TrainResult> run(int world, Stage stage, const TrainConfig& config = {}) {
  gtl::dist::RunOptions options = fast();
  for (int r = 0; r < world; ++r) options.allocators.push_back(gtl::make_cpu_allocator());
  std::vector<TrainResult> results(static_cast<std::size_t>(world));
  gtl::dist::run_ranks(
      world,
      [&](Communicator& comm) {
        results[static_cast<std::size_t>(comm.rank())] = train(comm, stage, config);
      },
      options);
  return results;
}

using gtl::testing::bitwise_diff;  // bitwise_diff.h

// Real elements of each unit of a model (make_units' order), and of the whole model.
inline std::vector<int64_t> unit_numels(const gtl::nn::ModelConfig& config) {
  std::vector<int64_t> numels;
  auto model = gtl::nn::make_model(config);
  for (std::size_t i = 0; i < model->size(); ++i) {
    if ((*model)[i].num_parameters() > 0) numels.push_back((*model)[i].num_parameters());
  }
  return numels;
}
inline int64_t model_numel(const gtl::nn::ModelConfig& config) {
  return gtl::nn::make_model(config)->num_parameters();
}

// Bytes rank r sends in one all-reduce of each buffer (padded for N ranks) on a ring: what DDP
// would move for the same buffers, 2 (N - 1) shards (the core's ShardLayout: independent of TODO
// 1).
inline int64_t ddp_bytes_sent(const std::vector<int64_t>& numels, int world) {
  int64_t bytes = 0;
  for (int64_t n : numels)
    bytes += 2 * (world - 1) * 4 * gtl::nn::ShardLayout(n, world).shard_size();
  return bytes;
}

}  // namespace lab06::testing
