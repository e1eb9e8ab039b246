// Lab 05, TODO 2: each rank its own shard of every epoch, and the same initial weights.
//
// Why one shared permutation: if each rank shuffled on its own, shards would overlap and some
// samples would never be seen. Why padding: every rank must run the same number of steps, or the
// ranks that finish early leave the others waiting forever in the next all-reduce.
#include <numeric>
#include <random>

#include "data_parallel.h"
#include "gtl/runtime/error.h"

namespace lab05 {

std::vector<int64_t> shard_indices(int64_t dataset_size, int rank, int world_size, uint64_t seed,
                                   int64_t epoch) {
  GTL_CHECK(dataset_size > 0 && world_size > 0 && rank >= 0 && rank < world_size,
            "shard_indices: bad arguments");
  // SOLUTION(lab05) step 2: this rank's shard of the epoch.
  std::vector<int64_t> order(static_cast<std::size_t>(dataset_size));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::mt19937_64 gen(seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(epoch));
  for (int64_t i = dataset_size - 1; i > 0; --i) {  // Fisher-Yates, the same on every rank
    std::swap(order[i], order[gen() % static_cast<uint64_t>(i + 1)]);
  }
  const int64_t per_rank = (dataset_size + world_size - 1) / world_size;
  std::vector<int64_t> mine;
  for (int64_t k = rank; k < per_rank * world_size; k += world_size) {
    mine.push_back(order[k % dataset_size]);  // positions past the end repeat the first ones
  }
  return mine;
  // END SOLUTION(lab05)
}

void broadcast_parameters(Communicator& comm, const std::vector<ParamRef>& params, int root) {
  // SOLUTION(lab05) step 2: every parameter value from `root`.
  for (const ParamRef& p : params) comm.broadcast(p.value, root);
  // END SOLUTION(lab05)
}

}  // namespace lab05
