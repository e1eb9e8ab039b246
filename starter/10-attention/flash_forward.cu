// Lab 10, TODO 2: FlashAttention's forward pass, the T x T scores never leaving the chip.
//
// Attention's output row o_i = sum_j softmax(S_i)_j v_j seems to need the whole row S_i before
// its first probability is known, which is why the naive kernels write S to memory. FlashAttention
// (Dao et al., 2022) never does: each block of queries streams the keys and values through shared
// memory a tile at a time, and keeps per query row only a few numbers and the output row being
// built, updated tile by tile. Lab 02's online softmax kept a running max and sum for one row of
// numbers; here a vector (the output row) rides along with them. The forward also saves lse_i,
// the log of the row's normaliser: backward rebuilds any P_ij from it without storing P.
//
// Reading: each key and value tile is read once per block of query rows, so DRAM traffic falls
// from O(T^2) (the naive kernels' S and P) to O(T^2 d / rows per block); with causal masking the
// tiles wholly above the diagonal are not read at all.
#include <cmath>

#include "attention.h"
#include "warp_reduce.cuh"

namespace lab10 {

namespace {

// TODO(lab10) step 2: flash_attention_forward (attention.h) for d = 64 and d = 128: o and lse,
// each block of queries streaming the key and value tiles through shared memory once. Nothing in
// global memory beyond o and lse, and no shared memory that grows with t. The sizes of the query
// and key tiles, and which thread owns which score and which output column, are yours to choose
// (the handout's shared-memory budget; warp_reduce.cuh). Causal: a block never loads a key tile
// none of its queries sees. Any t >= 1: the last tiles of queries and of keys may be partial.
// Hint: write the update of the running statistics and of the output for one new tile on paper,
// then run it by hand on a row whose largest score arrives in the last tile. About 80 lines.
cudaError_t launch_flash_forward(const float* q, const float* k, const float* v, float* o,
                                 float* lse, AttentionShape s, cudaStream_t stream) {
  (void)q, (void)k, (void)v, (void)o, (void)lse, (void)s, (void)stream;
  return cudaSuccess;  // nothing launched yet: the outputs stay as they were
}
// END TODO(lab10)

}  // namespace

cudaError_t flash_attention_forward(const float* q, const float* k, const float* v, float* o,
                                    float* lse, AttentionShape s, cudaStream_t stream) {
  if (s.d != 64 && s.d != 128) return cudaErrorInvalidValue;
  if (s.bh == 0 || s.t == 0) return cudaSuccess;
  return launch_flash_forward(q, k, v, o, lse, s, stream);
}

}  // namespace lab10
