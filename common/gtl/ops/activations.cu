// CUDA path of the activations: grid-stride loops applying the shared formulas of
// activations_math.h, so GPU and CPU evaluate the same expression.
#include "gtl/ops/activations_math.h"
#include "gtl/ops/detail/activations_cuda.h"
#include "gtl/ops/detail/warp_reduce.cuh"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

using launch::kThreadsPerBlock;
constexpr int64_t kMaxBlocks = 4096;

// The activation is a template parameter: one specialised kernel per function, no branch per
// element.
template <Activation kAct, typename T>
__global__ void forward_kernel(const T* x, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float v = convert<float>(x[i]);
    out[i] = convert<T>(kAct == Activation::Relu ? detail::relu_fwd(v) : detail::gelu_fwd(v));
  }
}

template <Activation kAct, typename T>
__global__ void backward_kernel(const T* x, const T* dout, T* dx, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float v = convert<float>(x[i]), g = convert<float>(dout[i]);
    dx[i] = convert<T>(kAct == Activation::Relu ? detail::relu_bwd(v, g) : detail::gelu_bwd(v, g));
  }
}

}  // namespace

void activation_forward(Activation act, const void* x, void* out, DType dtype, int64_t n,
                        cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = launch::grid_stride_blocks(n, kThreadsPerBlock, kMaxBlocks);
  GTL_DISPATCH_FLOATING(dtype, T, {
    const T* xt = static_cast<const T*>(x);
    T* ot = static_cast<T*>(out);
    if (act == Activation::Relu) {
      forward_kernel<Activation::Relu, T><<<blocks, kThreadsPerBlock, 0, stream>>>(xt, ot, n);
    } else {
      forward_kernel<Activation::Gelu, T><<<blocks, kThreadsPerBlock, 0, stream>>>(xt, ot, n);
    }
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void activation_backward(Activation act, const void* x, const void* dout, void* dx, DType dtype,
                         int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = launch::grid_stride_blocks(n, kThreadsPerBlock, kMaxBlocks);
  GTL_DISPATCH_FLOATING(dtype, T, {
    const T* xt = static_cast<const T*>(x);
    const T* gt = static_cast<const T*>(dout);
    T* dt = static_cast<T*>(dx);
    if (act == Activation::Relu) {
      backward_kernel<Activation::Relu, T><<<blocks, kThreadsPerBlock, 0, stream>>>(xt, gt, dt, n);
    } else {
      backward_kernel<Activation::Gelu, T><<<blocks, kThreadsPerBlock, 0, stream>>>(xt, gt, dt, n);
    }
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
