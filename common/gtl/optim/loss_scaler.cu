// The fused unscale-and-check kernel: one pass multiplies each gradient by 1/scale in float32 and
// raises the shared overflow flag on any inf or NaN, so unscaling and checking read the gradients
// once, and the host reads a single flag per step.
#include <cmath>

#include "gtl/optim/detail/loss_scaler_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::optim::detail {

namespace {

using launch::grid_stride_blocks;
using launch::kThreadsPerBlock;

template <typename T>
__global__ void unscale_kernel(T* g, int64_t n, float inv_scale, float* flag) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float v = convert<float>(g[i]) * inv_scale;
    g[i] = convert<T>(v);
    if (!isfinite(v)) *flag = 1.f;
  }
}

}  // namespace

void unscale_cuda(const Tensor& grad, float inv_scale, const Tensor& flag) {
  const int64_t n = grad.numel();
  if (n == 0) return;
  DeviceGuard guard(grad.device());
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_FLOATING(grad.dtype(), T, {
    unscale_kernel<T><<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(
        grad.data<T>(), n, inv_scale, flag.data<float>());
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::optim::detail
