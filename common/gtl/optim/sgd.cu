// The fused SGD kernel: one grid-stride pass per parameter, each element updated by the rule of
// update_rules.h in registers (one read of p, g, buf; one write of p, buf and the compute copy).
#include "gtl/optim/detail/sgd_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"

namespace gtl::optim::cuda {

namespace {

using launch::grid_stride_blocks;
using launch::kThreadsPerBlock;

template <typename P, typename C>
__global__ void sgd_kernel(P* p, const P* g, float* buf, C* compute, int64_t n,
                           rules::SgdScalars s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float updated =
        rules::sgd(convert<float>(p[i]), convert<float>(g[i]), buf ? buf + i : nullptr, s);
    p[i] = convert<P>(updated);
    if (compute) compute[i] = convert<C>(updated);
  }
}

}  // namespace

void sgd_step(const ParamRef& param, const Tensor& momentum_buffer, const rules::SgdScalars& s) {
  const int64_t n = param.value.numel();
  if (n == 0) return;
  DeviceGuard guard(param.value.device());
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_PARAM(param, P, C, {
    sgd_kernel<P, C><<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(
        param.value.data<P>(), param.grad.data<P>(),
        momentum_buffer.defined() ? momentum_buffer.data<float>() : nullptr,
        param.compute.defined() ? param.compute.data<C>() : nullptr, n, s);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::optim::cuda
