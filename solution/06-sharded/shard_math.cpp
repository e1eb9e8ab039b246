// TODO 1: shard arithmetic (sharded.h). Pure integer arithmetic, the same on every rank.
#include "sharded.h"

namespace lab06 {

int64_t shard_size(int64_t numel, int world_size) {
  // SOLUTION(lab06) step 1: ceil(numel / N)
  return (numel + world_size - 1) / world_size;
  // END SOLUTION(lab06)
}

int64_t padded_numel(int64_t numel, int world_size) {
  // SOLUTION(lab06) step 1: N shards of shard_size
  return shard_size(numel, world_size) * world_size;
  // END SOLUTION(lab06)
}

int64_t shard_offset(int64_t numel, int world_size, int rank) {
  // SOLUTION(lab06) step 1: rank r starts r shards in
  return rank * shard_size(numel, world_size);
  // END SOLUTION(lab06)
}

int64_t shard_real_numel(int64_t numel, int world_size, int rank) {
  // SOLUTION(lab06) step 1: the real elements left at the shard's start, clamped to 0 .. size
  const int64_t left = numel - shard_offset(numel, world_size, rank);
  const int64_t size = shard_size(numel, world_size);
  return left <= 0 ? 0 : (left < size ? left : size);
  // END SOLUTION(lab06)
}

int shard_owner(int64_t i, int64_t numel, int world_size) {
  // SOLUTION(lab06) step 1: whole shards before element i
  return static_cast<int>(i / shard_size(numel, world_size));
  // END SOLUTION(lab06)
}

}  // namespace lab06
