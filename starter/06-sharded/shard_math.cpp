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
  // TODO(lab06) step 1: the two functions of the layout that are yours (shard_real_numel here,
  //   shard_owner below); shard_size, padded_numel and shard_offset above are given. Spec
  //   (sharded.h, section 1): the ranks' real-element counts add up to numel, padding counting
  //   for none; every element of the padded buffer has exactly one owner, the rank whose shard
  //   holds it. Work it out on paper first for numel 7 on 3 ranks, 10 on 4 and 3 on 5: which
  //   ranks hold no real element at all? About 5 lines over the two functions.
  (void)numel, (void)world_size, (void)rank;
  return 0;
  // END TODO(lab06)
}

int shard_owner(int64_t i, int64_t numel, int world_size) {
  // TODO(lab06) step 1 (owner): the spec is in shard_real_numel.
  (void)i, (void)numel, (void)world_size;
  return 0;
  // END TODO(lab06)
}

}  // namespace lab06
