// Lab 02, TODO 1b: warp and block reductions, used by the reduction, softmax and layernorm kernels.
//
// Inside a warp, __shfl_xor_sync(mask, v, offset) hands each lane the register v of lane
// (lane ^ offset), with no shared memory and no __syncthreads. Across warps, values travel only
// through shared memory. Every thread of the block must call block_reduce, and every thread gets
// the result.
#pragma once

#include <cuda_runtime.h>

namespace lab02 {

__device__ inline float warp_reduce_sum(float v) {
  // SOLUTION(lab02) step 1b
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  // END SOLUTION(lab02)
  return v;
}

__device__ inline float warp_reduce_max(float v) {
  // SOLUTION(lab02) step 1b
  for (int offset = 16; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  // END SOLUTION(lab02)
  return v;
}

// `scratch` holds at least blockDim.x / 32 floats; blockDim.x is a multiple of 32.
template <bool kMax>
__device__ inline float block_reduce(float v, float* scratch) {
  // SOLUTION(lab02) step 1b
  v = kMax ? warp_reduce_max(v) : warp_reduce_sum(v);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : (kMax ? -INFINITY : 0.f);
  return kMax ? warp_reduce_max(v) : warp_reduce_sum(v);
  // END SOLUTION(lab02)
}

}  // namespace lab02
