// Kernels for core_patterns_test.cpp: the core's own block reduction (included from the core,
// not copied) beside two deliberately broken versions of the core's kernel patterns. In the
// emulated build CMake rewrites the launches and compiles this file as C++ with the emulator
// forced in (cmake/GtlEmulator.cmake). The broken kernels say WRONG where they are wrong.
#include <cuda_runtime.h>

#include <cstdint>

#include "core_patterns_kernels.h"
#include "gtl/ops/detail/warp_reduce.cuh"

namespace emutest::core {

namespace {

using gtl::ops::cuda_detail::kWarpSize;
using gtl::ops::cuda_detail::warp_sum;

// WRONG on purpose: the core's block_reduce without its first __syncthreads. Called twice in a
// row, a warp that is done with the first call writes its partial of the second into scratch
// while a slower warp still reads the first call's partials from it.
__device__ float block_sum_without_leading_barrier(float v, float* scratch) {
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int warps = (blockDim.x + kWarpSize - 1) / kWarpSize;
  v = warp_sum(v);
  if (lane == 0) scratch[warp] = v;  // WRONG: scratch may still be read by the previous call
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.f;
  return warp_sum(v);
}

template <bool kCoreReduce>
__global__ void two_block_sums_kernel(const float* x, int64_t n, float* firsts, float* seconds) {
  __shared__ float scratch[32];
  float sum = 0.f, squares = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    sum += x[i];
    squares += x[i] * x[i];
  }
  const float first = kCoreReduce ? gtl::ops::cuda_detail::block_reduce<false>(sum, scratch)
                                  : block_sum_without_leading_barrier(sum, scratch);
  const float second = kCoreReduce ? gtl::ops::cuda_detail::block_reduce<false>(squares, scratch)
                                   : block_sum_without_leading_barrier(squares, scratch);
  firsts[threadIdx.x] = first;
  seconds[threadIdx.x] = second;
}

// WRONG on purpose: `i <= n` visits element n, one past the end of x and y.
__global__ void scale_with_off_by_one_bound_kernel(const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i <= n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] = 2.f * x[i];
}

}  // namespace

void two_block_sums(const float* x, int64_t n, int threads, bool core_reduce, float* firsts,
                    float* seconds) {
  if (core_reduce) {
    two_block_sums_kernel<true><<<1, threads>>>(x, n, firsts, seconds);
  } else {
    two_block_sums_kernel<false><<<1, threads>>>(x, n, firsts, seconds);
  }
}

void scale_with_off_by_one_bound(const float* x, float* y, int64_t n) {
  scale_with_off_by_one_bound_kernel<<<2, 64>>>(x, y, n);
}

}  // namespace emutest::core
