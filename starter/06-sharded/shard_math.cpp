// Lab 06, TODO 1: shard arithmetic, the layout every sharded buffer of this lab follows.
//
// Why pad: a ring collective cuts its buffer into N equal chunks, so a buffer padded with zeros to
// a multiple of N makes chunk r exactly rank r's shard for every N (3, 5, 7 ...). Pure integer
// arithmetic, the same on every rank: no communication is needed to agree on who owns what.
#include "sharded.h"

namespace lab06 {

int64_t shard_size(int64_t numel, int world_size) {
  // TODO(lab06) step 1a: the size of each of the world_size equal shards (sharded.h, section 1:
  //   the padded buffer is the smallest multiple of world_size that holds numel). Check it on
  //   numel 3 with 5 ranks and numel 7 with 3 ranks. About 1 line.
  (void)numel, (void)world_size;
  return 0;
  // END TODO(lab06)
}

int64_t padded_numel(int64_t numel, int world_size) {
  // TODO(lab06) step 1b: the padded size (sharded.h, section 1). About 1 line.
  (void)numel, (void)world_size;
  return 0;
  // END TODO(lab06)
}

int64_t shard_offset(int64_t numel, int world_size, int rank) {
  // TODO(lab06) step 1c: where rank `rank`'s shard starts in the padded buffer. About 1 line.
  (void)numel, (void)world_size, (void)rank;
  return 0;
  // END TODO(lab06)
}

int64_t shard_real_numel(int64_t numel, int world_size, int rank) {
  // TODO(lab06) step 1d: how many of the shard's elements are real (index < numel), always in
  //   0 .. shard_size. Hint: a shard can be all real, part real, or all padding; try every rank
  //   of numel 3 on 5 ranks and of numel 10 on 4. About 3 lines.
  (void)numel, (void)world_size, (void)rank;
  return 0;
  // END TODO(lab06)
}

int shard_owner(int64_t i, int64_t numel, int world_size) {
  // TODO(lab06) step 1e: the rank whose shard holds element i. About 1 line.
  (void)i, (void)numel, (void)world_size;
  return 0;
  // END TODO(lab06)
}

}  // namespace lab06
