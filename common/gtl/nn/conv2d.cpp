// Conv2d layer over ops/conv2d.h (see conv2d.h).
#include "gtl/nn/conv2d.h"

#include <cmath>

#include "gtl/nn/precision.h"

namespace gtl::nn {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Generator& gen,
               int64_t stride, int64_t padding)
    : Module("conv2d"),
      in_channels_(in_channels),
      params_conv_(ops::Conv2dParams::make(stride, padding)) {
  GTL_CHECK(in_channels > 0 && out_channels > 0 && kernel > 0,
            "Conv2d: channels and kernel must be positive, got in "
                << in_channels << ", out " << out_channels << ", kernel " << kernel);
  const float bound = 1.f / std::sqrt(static_cast<float>(in_channels * kernel * kernel));
  add_parameter("weight",
                Tensor::uniform({out_channels, in_channels, kernel, kernel}, gen, -bound, bound));
  add_parameter("bias", Tensor::uniform({out_channels}, gen, -bound, bound));
}

ComputeCost Conv2d::forward_cost(const Shape& input_shape) const {
  const Shape& w = params_[0].value.shape();
  const Shape y = ops::conv2d_output_shape(input_shape, w, params_conv_);
  const double elem = static_cast<double>(dtype_size(current_precision().compute));
  const double outputs = static_cast<double>(shape_numel(y));
  const double macs_per_output = static_cast<double>(w[1] * w[2] * w[3]);
  const double bytes =
      static_cast<double>(shape_numel(input_shape) + shape_numel(w) + shape_numel(y)) * elem +
      static_cast<double>(w[0]) * sizeof(float);
  return {2 * outputs * macs_per_output, bytes};
}

Tensor Conv2d::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() == 4 && x.size(1) == in_channels_,
            "Conv2d '" << path() << "': expected input [N, " << in_channels_ << ", H, W], got "
                       << shape_str(x.shape()));
  Tensor xc = cast_to_compute(x);
  const DType dt = xc.dtype();
  Tensor y =
      ops::conv2d_forward(xc, weight_as(params_[0], dt), weight_as(params_[1], dt), params_conv_);
  ctx.saved = {xc};
  return y;
}

Tensor Conv2d::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const Tensor& xc = ctx.saved.at(0);
  Tensor dyc = cast_to(dy, xc.dtype());
  const ParamRef& w = params_[0];
  Tensor dx = ops::conv2d_backward_data(dyc, weight_as(w, xc.dtype()), xc.shape(), params_conv_);
  write_grad(w, ops::conv2d_backward_weight(dyc, xc, w.value.shape(), params_conv_), mode);
  write_grad(params_[1], ops::conv2d_backward_bias(dyc), mode);
  return cast_to(dx, ctx.input_dtype);
}

}  // namespace gtl::nn
