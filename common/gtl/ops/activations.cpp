// Activations: argument checks, the CPU loops, and dispatch to the CUDA path (activations.cu).
// The formulas themselves live in activations_math.h so both paths share one expression.
#include "gtl/ops/activations.h"

#include "gtl/ops/activations_math.h"
#include "gtl/ops/detail/checks.h"
#include "gtl/runtime/device.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/activations_cuda.h"
#endif

namespace gtl::ops {

namespace {

enum class Act { Relu, Gelu };

#ifdef GTL_WITH_CUDA
cuda::Activation to_cuda(Act act) {
  return act == Act::Relu ? cuda::Activation::Relu : cuda::Activation::Gelu;
}
#endif

// The activation is chosen once per call, outside the loop: no per-element branch on `act`.
template <typename T>
void forward_cpu(Act act, const T* x, T* out, int64_t n) {
  if (act == Act::Relu) {
    for (int64_t i = 0; i < n; ++i) out[i] = convert<T>(detail::relu_fwd(convert<float>(x[i])));
  } else {
    for (int64_t i = 0; i < n; ++i) out[i] = convert<T>(detail::gelu_fwd(convert<float>(x[i])));
  }
}

template <typename T>
void backward_cpu(Act act, const T* x, const T* dout, T* dx, int64_t n) {
  if (act == Act::Relu) {
    for (int64_t i = 0; i < n; ++i)
      dx[i] = convert<T>(detail::relu_bwd(convert<float>(x[i]), convert<float>(dout[i])));
  } else {
    for (int64_t i = 0; i < n; ++i)
      dx[i] = convert<T>(detail::gelu_bwd(convert<float>(x[i]), convert<float>(dout[i])));
  }
}

Tensor forward(const char* op, Act act, const Tensor& x) {
  detail::check_floating(op, "x", x);
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    cuda::activation_forward(to_cuda(act), x.data_ptr(), out.data_ptr(), x.dtype(), x.numel(),
                             current_stream().handle());
    return out;
#else
    detail::no_cuda(op);
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T,
                        { forward_cpu<T>(act, x.data<T>(), out.data<T>(), x.numel()); });
  return out;
}

Tensor backward(const char* op, Act act, const Tensor& x, const Tensor& dout) {
  check_same_device(op, {&x, &dout});
  detail::check_floating(op, "x", x);
  detail::check_same_shape_dtype(op, "x", x, "dout", dout);
  Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    cuda::activation_backward(to_cuda(act), x.data_ptr(), dout.data_ptr(), dx.data_ptr(), x.dtype(),
                              x.numel(), current_stream().handle());
    return dx;
#else
    detail::no_cuda(op);
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T, {
    backward_cpu<T>(act, x.data<T>(), dout.data<T>(), dx.data<T>(), x.numel());
  });
  return dx;
}

}  // namespace

Tensor relu(const Tensor& x) {
  return forward("relu", Act::Relu, x);
}
Tensor relu_backward(const Tensor& x, const Tensor& dout) {
  return backward("relu_backward", Act::Relu, x, dout);
}
Tensor gelu(const Tensor& x) {
  return forward("gelu", Act::Gelu, x);
}
Tensor gelu_backward(const Tensor& x, const Tensor& dout) {
  return backward("gelu_backward", Act::Gelu, x, dout);
}

}  // namespace gtl::ops
