// A warp's max and sum of one float per lane, every lane getting the result: the butterfly of
// lab 02 (five shuffles), given: the attention kernels need it in their inner loops.
#pragma once

#include <cuda_runtime.h>

namespace lab10 {

__device__ inline float warp_max(float x) {
  for (int offset = 16; offset > 0; offset /= 2)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

__device__ inline float warp_sum(float x) {
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

}  // namespace lab10
