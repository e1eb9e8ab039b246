// The fused unscale-and-check kernel: one pass multiplies each gradient by 1/scale in float32 and
// raises the shared overflow flag on any inf or NaN, so unscaling and checking read the gradients
// once, and the host reads a single flag per step.
#include <cmath>

#include "gtl/optim/loss_scaler.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::optim::detail {

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  const int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 * 8 ? blocks : 65535 * 8);
}

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
    unscale_kernel<<<blocks_for(n), kThreads, 0, stream>>>(grad.data<T>(), n, inv_scale,
                                                           flag.data<float>());
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::optim::detail
