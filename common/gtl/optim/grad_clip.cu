// The clip-scaling kernel: every thread reads the norm from device memory and computes the same
// coefficient, so the host never has to copy the norm back before scaling.
#include "gtl/optim/detail/grad_clip_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::optim::detail {

namespace {

using launch::grid_stride_blocks;
using launch::kThreadsPerBlock;

template <typename T>
__global__ void clip_kernel(T* g, int64_t n, const float* norm, float max_norm) {
  const float coef = max_norm / (*norm + 1e-6f);
  if (coef >= 1.f) return;  // min(coef, 1) is 1: nothing to do (a NaN coef goes on)
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    g[i] = convert<T>(convert<float>(g[i]) * coef);
}

}  // namespace

void scale_by_clip_coef_cuda(const Tensor& grad, const Tensor& norm, float max_norm) {
  const int64_t n = grad.numel();
  if (n == 0) return;
  DeviceGuard guard(grad.device());
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_FLOATING(grad.dtype(), T, {
    clip_kernel<T><<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(
        grad.data<T>(), n, norm.data<float>(), max_norm);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::optim::detail
