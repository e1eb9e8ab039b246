// ReLU and GELU layers over ops/activations.h (see activation.h).
#include "gtl/nn/activation.h"

#include "gtl/nn/precision.h"
#include "gtl/ops/activations.h"

namespace gtl::nn {

Tensor ReLU::forward_impl(const Tensor& x, Context& ctx) {
  ctx.saved = {x};
  return ops::relu(x);
}

Tensor ReLU::backward_impl(Context& ctx, const Tensor& dy, GradMode) {
  const Tensor& x = ctx.saved.at(0);
  return ops::relu_backward(x, cast_to(dy, x.dtype()));
}

Tensor GELU::forward_impl(const Tensor& x, Context& ctx) {
  ctx.saved = {x};
  return ops::gelu(x);
}

Tensor GELU::backward_impl(Context& ctx, const Tensor& dy, GradMode) {
  const Tensor& x = ctx.saved.at(0);
  return ops::gelu_backward(x, cast_to(dy, x.dtype()));
}

}  // namespace gtl::nn
