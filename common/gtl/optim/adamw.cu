// The fused AdamW kernel (llm.c's adamw kernel is the model): one grid-stride pass per parameter;
// each thread loads p, g, m, v, applies update_rules.h's AdamW rule in float32 registers and
// stores p, m, v (and the rounded compute copy for master weights). 16 bytes read and 12 written
// per float32 element: the kernel runs at memory bandwidth.
#include "gtl/optim/detail/adamw_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"

namespace gtl::optim::cuda {

namespace {

using launch::grid_stride_blocks;
using launch::kThreadsPerBlock;

template <typename P, typename C>
__global__ void adamw_kernel(P* p, const P* g, float* m, float* v, C* compute, int64_t n,
                             rules::AdamWScalars s) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float updated = rules::adamw(convert<float>(p[i]), convert<float>(g[i]), m + i, v + i, s);
    p[i] = convert<P>(updated);
    if (compute) compute[i] = convert<C>(updated);
  }
}

}  // namespace

void adamw_step(const ParamRef& param, const Tensor& m, const Tensor& v,
                const rules::AdamWScalars& s) {
  const int64_t n = param.value.numel();
  if (n == 0) return;
  DeviceGuard guard(param.value.device());
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_PARAM(param, P, C, {
    adamw_kernel<P, C><<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(
        param.value.data<P>(), param.grad.data<P>(), m.data<float>(), v.data<float>(),
        param.compute.defined() ? param.compute.data<C>() : nullptr, n, s);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::optim::cuda
