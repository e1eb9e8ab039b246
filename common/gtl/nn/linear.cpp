// Linear forward and backward as GEMMs (see linear.h).
#include "gtl/nn/linear.h"

#include <cmath>

#include "gtl/nn/precision.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/reduce.h"

namespace gtl::nn {

Linear::Linear(int64_t in_features, int64_t out_features, Generator& gen, bool bias)
    : Module("linear"), in_(in_features), out_(out_features), has_bias_(bias) {
  GTL_CHECK(in_ > 0 && out_ > 0,
            "Linear: sizes must be positive, got in " << in_ << ", out " << out_);
  const float bound = 1.f / std::sqrt(static_cast<float>(in_));
  add_parameter("weight", Tensor::uniform({out_, in_}, gen, -bound, bound));
  if (has_bias_) add_parameter("bias", Tensor::uniform({out_}, gen, -bound, bound));
}

namespace linear {

Tensor forward(const Tensor& x, const ParamRef& weight, Context& ctx) {
  Tensor xc = cast_to_compute(x);
  ctx.saved = {xc};
  return ops::matmul(xc, weight_as(weight, xc.dtype()), false, true);  // [N, out]
}

Tensor backward(Context& ctx, const Tensor& dy, const ParamRef& weight, const ParamRef* bias,
                GradMode mode, WriteGrad write) {
  const Tensor& xc = ctx.saved.at(0);
  Tensor dyc = cast_to(dy, xc.dtype());
  Tensor dx = ops::matmul(dyc, weight_as(weight, xc.dtype()));  // [N, in] = dy W
  // dW = dy^T x [out, in]. In float32 the GEMM writes (beta 0) or adds (beta 1) straight into
  // the gradient; in half precision it produces a half tensor that write_grad widens.
  if (dyc.dtype() == weight.grad.dtype()) {
    ops::matmul_out(dyc, xc, weight.grad, true, false, 1.f,
                    mode == GradMode::Accumulate ? 1.f : 0.f);
  } else {
    write(weight, ops::matmul(dyc, xc, true, false), mode);
  }
  if (bias != nullptr) write(*bias, ops::sum_rows(dyc), mode);
  return dx;
}

namespace {
double compute_dtype_bytes() {
  return static_cast<double>(dtype_size(current_precision().compute));
}
}  // namespace

ComputeCost forward_cost(int64_t rows, int64_t in, int64_t out, bool bias) {
  const double r = static_cast<double>(rows), i = static_cast<double>(in);
  const double o = static_cast<double>(out);
  const double bias_bytes = bias ? o * sizeof(float) : 0.0;
  return {2 * r * i * o, (r * i + o * i + r * o) * compute_dtype_bytes() + bias_bytes};
}

ComputeCost backward_cost(int64_t rows, int64_t in, int64_t out, bool bias) {
  const double r = static_cast<double>(rows), i = static_cast<double>(in);
  const double o = static_cast<double>(out);
  const double bias_bytes = bias ? o * sizeof(float) : 0.0;
  const double dx_gemm = r * o + o * i + r * i;  // reads dy, W; writes dx
  const double dw_gemm = r * o + r * i + o * i;  // reads dy, x; writes dW
  return {4 * r * i * o, (dx_gemm + dw_gemm) * compute_dtype_bytes() + bias_bytes};
}

}  // namespace linear

ComputeCost Linear::forward_cost(const Shape& input_shape) const {
  return linear::forward_cost(shape_numel(input_shape) / in_, in_, out_, has_bias_);
}

ComputeCost Linear::backward_cost(const Shape& input_shape) const {
  return linear::backward_cost(shape_numel(input_shape) / in_, in_, out_, has_bias_);
}

Tensor Linear::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_, "Linear '" << path() << "': expected input [N, "
                                                         << in_ << "], got "
                                                         << shape_str(x.shape()));
  Tensor y = linear::forward(x, weight(), ctx);
  if (has_bias_) ops::bias_add_(y, params_[1].value);  // float32 bias
  return y;
}

Tensor Linear::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const ParamRef* bias = has_bias_ ? &params_[1] : nullptr;
  return cast_to(linear::backward(ctx, dy, weight(), bias, mode, &Module::write_grad),
                 ctx.input_dtype);
}

}  // namespace gtl::nn
