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

namespace {
double compute_dtype_bytes() {
  return static_cast<double>(dtype_size(current_precision().compute));
}
}  // namespace

ComputeCost Linear::forward_cost(const Shape& input_shape) const {
  const double rows = static_cast<double>(shape_numel(input_shape) / in_);
  const double in = static_cast<double>(in_), out = static_cast<double>(out_);
  const double bias_bytes = has_bias_ ? out * sizeof(float) : 0.0;
  return {2 * rows * in * out,
          (rows * in + out * in + rows * out) * compute_dtype_bytes() + bias_bytes};
}

ComputeCost Linear::backward_cost(const Shape& input_shape) const {
  const double rows = static_cast<double>(shape_numel(input_shape) / in_);
  const double in = static_cast<double>(in_), out = static_cast<double>(out_);
  const double bias_bytes = has_bias_ ? out * sizeof(float) : 0.0;
  const double dx_gemm = rows * out + out * in + rows * in;  // reads dy, W; writes dx
  const double dw_gemm = rows * out + rows * in + out * in;  // reads dy, x; writes dW
  return {4 * rows * in * out, (dx_gemm + dw_gemm) * compute_dtype_bytes() + bias_bytes};
}

Tensor Linear::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_, "Linear '" << path() << "': expected input [N, "
                                                         << in_ << "], got "
                                                         << shape_str(x.shape()));
  Tensor xc = cast_to_compute(x);
  Tensor y = ops::matmul(xc, weight_as(weight(), xc.dtype()), false, true);  // [N, out]
  if (has_bias_) ops::bias_add_(y, params_[1].value);                        // float32 bias
  ctx.saved = {xc};
  return y;
}

Tensor Linear::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const Tensor& xc = ctx.saved.at(0);
  Tensor dyc = cast_to(dy, xc.dtype());
  const ParamRef& w = weight();
  Tensor dx = ops::matmul(dyc, weight_as(w, xc.dtype()));  // [N, in] = dy W
  // dW = dy^T x [out, in]. In float32 the GEMM writes (beta 0) or adds (beta 1) straight into
  // the gradient; in half precision it produces a half tensor that write_grad widens.
  if (dyc.dtype() == w.grad.dtype()) {
    ops::matmul_out(dyc, xc, w.grad, true, false, 1.f, mode == GradMode::Accumulate ? 1.f : 0.f);
  } else {
    write_grad(w, ops::matmul(dyc, xc, true, false), mode);
  }
  if (has_bias_) write_grad(params_[1], ops::sum_rows(dyc), mode);
  return cast_to(dx, ctx.input_dtype);
}

}  // namespace gtl::nn
