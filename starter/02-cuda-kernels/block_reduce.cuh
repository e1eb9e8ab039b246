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
  // TODO(lab02) step 1b: five butterfly steps, offset = 16, 8, 4, 2, 1:
  // v += __shfl_xor_sync(0xffffffffu, v, offset). Every lane ends with the warp's sum.
  return v;
}

__device__ inline float warp_reduce_max(float v) {
  // TODO(lab02) step 1b: as warp_reduce_sum, with fmaxf instead of +.
  return v;
}

// `scratch` holds at least blockDim.x / 32 floats; blockDim.x is a multiple of 32.
template <bool kMax>
__device__ inline float block_reduce(float v, float* scratch) {
  // TODO(lab02) step 1b: reduce within each warp (warp_reduce_sum or _max), let lane 0 of each
  // warp write its result to scratch[warp], then have every warp reduce scratch[0 .. warps)
  // (lanes past the number of warps contribute 0, or -INFINITY for a max). Put a __syncthreads()
  // before writing scratch (a previous call may still read it) and one after.
  (void)scratch;
  return v;
}

}  // namespace lab02
