// Lab 06, TODO 1: shard arithmetic, the layout every sharded buffer of this lab follows.
//
// Why pad: a ring collective cuts its buffer into N equal chunks, so a buffer padded with zeros to
// a multiple of N makes chunk r exactly rank r's shard for every N (3, 5, 7 ...). Pure integer
// arithmetic, the same on every rank: no communication is needed to agree on who owns what.
#include "sharded.h"

namespace lab06 {

int64_t shard_size(int64_t numel, int world_size) {
  return (numel + world_size - 1) / world_size;  // given: ceil(numel / N)
}

int64_t padded_numel(int64_t numel, int world_size) {
  return shard_size(numel, world_size) * world_size;  // given: N shards of shard_size
}

int64_t shard_offset(int64_t numel, int world_size, int rank) {
  return rank * shard_size(numel, world_size);  // given: rank r starts r shards in
}

int64_t shard_real_numel(int64_t numel, int world_size, int rank) {
  // SOLUTION(lab06) step 1 (real elements): what is left at the shard start, in 0 .. size
  const int64_t left = numel - shard_offset(numel, world_size, rank);
  const int64_t size = shard_size(numel, world_size);
  return left <= 0 ? 0 : (left < size ? left : size);
  // END SOLUTION(lab06)
}

int shard_owner(int64_t i, int64_t numel, int world_size) {
  // SOLUTION(lab06) step 1 (owner): whole shards before element i
  return static_cast<int>(i / shard_size(numel, world_size));
  // END SOLUTION(lab06)
}

}  // namespace lab06
