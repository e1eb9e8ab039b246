// MaxPool2d layer over ops/pool2d.h (see max_pool2d.h).
#include "gtl/nn/max_pool2d.h"

#include "gtl/nn/precision.h"

namespace gtl::nn {

MaxPool2d::MaxPool2d(int64_t kernel, int64_t stride)
    : Module("max_pool2d"),
      params_pool_(ops::Pool2dParams::make(kernel, stride ? stride : kernel)) {}

ComputeCost MaxPool2d::forward_cost(const Shape& input_shape) const {
  const double outputs =
      static_cast<double>(shape_numel(ops::pool2d_output_shape(input_shape, params_pool_)));
  const double elem = static_cast<double>(dtype_size(current_precision().compute));
  const double window = static_cast<double>(params_pool_.kernel_h * params_pool_.kernel_w);
  return {window * outputs, static_cast<double>(shape_numel(input_shape)) * elem +
                                outputs * (elem + sizeof(int64_t))};
}

Tensor MaxPool2d::forward_impl(const Tensor& x, Context& ctx) {
  ops::MaxPool2dResult r = ops::max_pool2d_forward(x, params_pool_);
  ctx.saved = {r.indices};
  return r.output;
}

Tensor MaxPool2d::backward_impl(Context& ctx, const Tensor& dy, GradMode) {
  return ops::max_pool2d_backward(cast_to(dy, ctx.input_dtype), ctx.saved.at(0), ctx.input_shape,
                                  params_pool_);
}

}  // namespace gtl::nn
