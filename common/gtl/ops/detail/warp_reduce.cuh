// Reductions across a warp and a block (internal: include only from ops/*.cu; grid sizes are in
// gtl/runtime/launch.h).
//
// A warp's 32 lanes exchange registers with __shfl_xor_sync: after log2(32) = 5 butterfly steps
// every lane holds the total, with no shared memory and no __syncthreads. A block reduction does
// that per warp, parks one value per warp in shared memory, and lets warp 0 reduce those.
#pragma once

#include <cstdint>

#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda_detail {

constexpr unsigned kFullMask = launch::kFullWarpMask;
constexpr int kWarpSize = launch::kWarpSize;

__device__ inline float warp_sum(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

// fmaxf(NaN, x) returns x: a max that drops NaN would hide a diverged run, so NaN wins here.
__device__ inline float nan_max(float a, float b) {
  return (a != a || a > b) ? a : b;
}

__device__ inline float warp_max(float v) {
  for (int offset = kWarpSize / 2; offset > 0; offset >>= 1)
    v = nan_max(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

// Every thread of the block must call it; every thread gets the block's total. `scratch` holds
// one float per warp (32 is enough for 1024 threads).
template <bool kMax>
__device__ inline float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = kMax ? warp_max(v) : warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const float identity = kMax ? -INFINITY : 0.f;
  v = lane < warps ? scratch[lane] : identity;
  return kMax ? warp_max(v) : warp_sum(v);
}

// The row statistics of a numerically stable softmax, computed by one warp in one pass over a
// row ("online softmax"): each lane keeps a running max m and s = sum exp(x - m), rescaling s
// whenever m grows; then the lanes merge their (m, s) pairs. On return every lane holds the row
// max in `m` and sum_j exp(x_j - m) in `s`. -inf entries (masked) contribute exactly 0.
struct MaxSumExp {
  float m;
  float s;
};

template <typename T>
__device__ inline MaxSumExp warp_max_sumexp(const T* row, int64_t cols) {
  const int lane = threadIdx.x % kWarpSize;
  float m = -INFINITY, s = 0.f;
  for (int64_t c = lane; c < cols; c += kWarpSize) {
    const float v = convert<float>(row[c]);
    if (v == -INFINITY) continue;  // exp(-inf) = 0; skipping avoids exp(-inf - -inf) = NaN
    if (v > m) {
      s = s * expf(m - v) + 1.f;
      m = v;
    } else {
      s += expf(v - m);  // NaN falls here and poisons s, as it should
    }
  }
  const float row_max = warp_max(m);
  s = m == -INFINITY ? 0.f : s * expf(m - row_max);
  return {row_max, warp_sum(s)};
}

}  // namespace gtl::ops::cuda_detail
