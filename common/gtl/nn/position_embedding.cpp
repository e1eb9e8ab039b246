// PositionEmbedding: a broadcast add forward, a batch sum backward (see position_embedding.h).
#include "gtl/nn/position_embedding.h"

#include "gtl/nn/precision.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/reduce.h"

namespace gtl::nn {

PositionEmbedding::PositionEmbedding(int64_t context, int64_t dim, Generator& gen)
    : Module("position_embedding"), context_(context), dim_(dim) {
  GTL_CHECK(context > 0 && dim > 0, "PositionEmbedding: sizes must be positive, got context "
                                        << context << ", dim " << dim);
  add_parameter("weight", Tensor::normal({context, dim}, gen, 0.f, 0.02f));
}

ComputeCost PositionEmbedding::forward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape));
  const double td = static_cast<double>(input_shape.at(1) * dim_);
  return {n, (2 * n + td) * sizeof(float)};
}

ComputeCost PositionEmbedding::backward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape));
  const double td = static_cast<double>(input_shape.at(1) * dim_);
  return {n, (n + td) * sizeof(float)};
}

Tensor PositionEmbedding::add_positions(const Tensor& x, int64_t start) const {
  GTL_CHECK(x.dim() == 3 && x.size(2) == dim_ && x.dtype() == DType::Float32,
            "PositionEmbedding '" << path() << "': expected float32 [B, T, " << dim_ << "], got "
                                  << shape_str(x.shape()) << " " << dtype_name(x.dtype()));
  const int64_t b = x.size(0), t = x.size(1);
  GTL_CHECK(start >= 0 && start + t <= context_, "PositionEmbedding '"
                                                     << path() << "': positions " << start << ".."
                                                     << start + t - 1 << " exceed the context of "
                                                     << context_ << " the model was built with");
  // Rows [start, start + T) of P are one contiguous [T*D] vector: a bias over x seen as [B, T*D].
  const Tensor rows = weight().value.slice(start, start + t).reshape({t * dim_});
  return ops::bias_add(x.reshape({b, t * dim_}), rows).reshape(x.shape());
}

Tensor PositionEmbedding::forward_impl(const Tensor& x, Context&) {
  return add_positions(x, 0);  // saves nothing (see the header)
}

Tensor PositionEmbedding::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const int64_t b = ctx.input_shape[0], t = ctx.input_shape[1];
  const Tensor d32 = cast_to(dy, DType::Float32);
  const Tensor dp = ops::sum_rows(d32.reshape({b, t * dim_})).reshape({t, dim_});
  const ParamRef& p = weight();
  Tensor grad = p.grad;                           // a handle on the gradient's data
  if (mode == GradMode::Overwrite) grad.zero_();  // rows past T: gradient 0
  ops::add_(p.grad.slice(0, t), dp);
  return d32;
}

}  // namespace gtl::nn
