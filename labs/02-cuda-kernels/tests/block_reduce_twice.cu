// TODO 1b's block_reduce called twice in a row through the same scratch, as the softmax and
// layernorm kernels call it: a block max, then a block sum. A pristine test kernel, compiled beside
// your block_reduce.cuh by TODO 1b's tests (kernels_emulated_test.cpp), since the checks of TODOs
// 4 and 5 use a reference block reduction instead of yours. Without the barrier at the start of
// block_reduce, a warp that runs ahead into the second call overwrites scratch before the other
// warps have read the first call's totals from it; every thread stores what it got, so any thread
// that read a wrong total shows.
#include <cuda_runtime.h>

#include "block_reduce.cuh"

namespace {

__global__ void max_then_sum_kernel(const float* x, float* out, int n) {
  __shared__ float scratch[32];
  const int i = static_cast<int>(threadIdx.x);
  const float block_max = lab02::block_reduce<true>(i < n ? x[i] : -INFINITY, scratch);
  const float block_sum = lab02::block_reduce<false>(i < n ? x[i] : 0.f, scratch);
  out[2 * i] = block_max;
  out[2 * i + 1] = block_sum;
}

}  // namespace

namespace lab02_tests {

// out[2 t] and out[2 t + 1]: the max and the sum of x[0, n) as thread t of one block of `threads`
// (a multiple of 32, n <= threads) got them.
void block_max_then_sum(const float* x, float* out, int n, int threads) {
  max_then_sum_kernel<<<1, threads>>>(x, out, n);
}

}  // namespace lab02_tests
