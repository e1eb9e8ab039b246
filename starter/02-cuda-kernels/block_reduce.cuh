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
  // TODO(lab02) step 1b: every lane ends with the sum of the warp's 32 values of v, exchanged
  // through registers with __shfl_xor_sync (no shared memory). Decide which offsets, and how
  // many. About 2 lines.
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
  // TODO(lab02) step 1b: every thread gets the block's result (the sum, or the max when kMax),
  // and a second call right after the first, with the same scratch, gives the right result too
  // (the row kernels of 4 and 5 call it twice in a row; *.BlockReduceTwiceInARow runs that under
  // the emulator's schedules). Where no warp contributes a value, use the identity: 0, or
  // -INFINITY for a max. Decide what goes through scratch and where the barriers go. About 7
  // lines.
  (void)scratch;
  return v;
  // END TODO(lab02)
}

}  // namespace lab02
