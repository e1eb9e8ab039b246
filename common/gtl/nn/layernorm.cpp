// LayerNorm layer over ops/layernorm.h (see layernorm.h).
#include "gtl/nn/layernorm.h"

#include "gtl_reference_guard.h"  // grader/channel: lab 08 builds this; its TODO may not call it

#include "gtl/nn/precision.h"
#include "gtl/ops/layernorm.h"

namespace gtl::nn {

LayerNorm::LayerNorm(int64_t features, float eps)
    : Module("layernorm"), features_(features), eps_(eps) {
  GTL_CHECK(features > 0, "LayerNorm: features must be positive, got " << features);
  add_parameter("weight", Tensor::ones({features}));
  add_parameter("bias", Tensor::zeros({features}));
}

void LayerNorm::set_sequence_parallel(dist::Communicator* tp) {
  gtl::grading::reference_guard("gtl::nn::LayerNorm::set_sequence_parallel");
  sequence_parallel_ = tp;
}

ComputeCost LayerNorm::forward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape));
  const double rows = n / static_cast<double>(features_);
  const double f = static_cast<double>(features_);
  return {8 * n, (2 * n + 2 * f + 2 * rows) * sizeof(float)};
}

Tensor LayerNorm::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() >= 1 && x.size(-1) == features_,
            "LayerNorm '" << path() << "': expected input [..., " << features_ << "], got "
                          << shape_str(x.shape()));
  Tensor x32 = cast_to(x, DType::Float32);
  ops::LayerNormForward f = ops::layernorm_forward(x32, params_[0].value, params_[1].value, eps_);
  ctx.saved = {x32, f.mean, f.rstd};
  return f.out;
}

Tensor LayerNorm::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const Tensor& x32 = ctx.saved.at(0);
  ops::LayerNormBackward b = ops::layernorm_backward(
      cast_to(dy, DType::Float32), x32, params_[0].value, ctx.saved.at(1), ctx.saved.at(2));
  if (sequence_parallel_ != nullptr) {  // this rank's tokens' share -> every token's
    sequence_parallel_->all_reduce(b.dweight);
    sequence_parallel_->all_reduce(b.dbias);
  }
  write_grad(params_[0], b.dweight, mode);
  write_grad(params_[1], b.dbias, mode);
  return cast_to(b.dx, ctx.input_dtype);
}

}  // namespace gtl::nn
