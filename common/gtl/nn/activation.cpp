// ReLU and GELU layers over ops/activations.h (see activation.h).
#include "gtl/nn/activation.h"

#include "gtl/nn/precision.h"
#include "gtl/ops/activations.h"

namespace gtl::nn {

namespace {
ComputeCost elementwise_cost(const Shape& shape, double flops_per_element) {
  const double n = static_cast<double>(shape_numel(shape));
  return {flops_per_element * n,
          2 * n * static_cast<double>(dtype_size(current_precision().compute))};
}
}  // namespace

ComputeCost ReLU::forward_cost(const Shape& input_shape) const {
  return elementwise_cost(input_shape, 1);
}

ComputeCost GELU::forward_cost(const Shape& input_shape) const {
  return elementwise_cost(input_shape, 9);
}

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
