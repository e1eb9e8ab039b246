// Lab 02, TODO 1b: warp and block reductions, used by the reduction, softmax and layernorm kernels.
//
// Inside a warp, __shfl_xor_sync(mask, v, offset) hands each lane the register v of lane
// (lane ^ offset): after offsets 16, 8, 4, 2, 1 (a butterfly) every lane holds the warp's total,
// with no shared memory and no __syncthreads. Across warps, lane 0 of each warp writes its total to
// shared memory and the first warp reduces those. Every thread of the block must call
// block_reduce, and every thread gets the result.
#pragma once

#include <cuda_runtime.h>

namespace lab02 {

__device__ inline float warp_reduce_sum(float v) {
  // TODO(lab02) step 1b: every lane ends with the sum of the warp's 32 values of v, exchanged
  // through registers with __shfl_xor_sync (log2(32) butterfly steps, no shared memory).
  // About 2 lines.
  // END TODO(lab02)
  return v;
}

__device__ inline float warp_reduce_max(float v) {
  // TODO(lab02) step 1b: as warp_reduce_sum, for the maximum. About 2 lines.
  // END TODO(lab02)
  return v;
}

// `scratch` holds at least blockDim.x / 32 floats; blockDim.x is a multiple of 32.
template <bool kMax>
__device__ inline float block_reduce(float v, float* scratch) {
  // TODO(lab02) step 1b: every thread gets the block's result: reduce within each warp, pass
  // each warp's result through scratch (one float per warp), and reduce those in every warp (lanes
  // past the number of warps contribute the identity: 0, or -INFINITY for a max). Hint: a previous
  // call may still be reading scratch. About 7 lines.
  (void)scratch;
  return v;
  // END TODO(lab02)
}

}  // namespace lab02
