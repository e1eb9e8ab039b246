// CUDA kernel of ops::causal_mask_: one thread per score (see causal_mask.h).
#include "gtl/ops/detail/causal_mask_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

template <typename T>
__global__ void causal_mask_kernel(T* s, int64_t total, int64_t tq, int64_t tk) {
  const int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (e >= total) return;
  const int64_t j = e % tk, i = (e / tk) % tq;
  if (j > i + (tk - tq)) s[e] = convert<T>(-INFINITY);
}

}  // namespace

void causal_mask_(const Tensor& scores, int64_t n, int64_t tq, int64_t tk) {
  DeviceGuard guard(scores.device());
  cudaStream_t stream = current_stream().handle();
  const int64_t total = n * tq * tk;
  GTL_DISPATCH_FLOATING(scores.dtype(), T, {
    causal_mask_kernel<T><<<launch::blocks_to_cover(total), launch::kThreadsPerBlock, 0, stream>>>(
        scores.data<T>(), total, tq, tk);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
