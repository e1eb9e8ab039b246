// TokenEmbedding over ops/embedding.h (see token_embedding.h).
#include "gtl/nn/token_embedding.h"

#include "gtl/nn/precision.h"
#include "gtl/ops/embedding.h"

namespace gtl::nn {

TokenEmbedding::TokenEmbedding(int64_t vocab, int64_t dim, Generator& gen)
    : Module("token_embedding"), vocab_(vocab), dim_(dim) {
  GTL_CHECK(vocab > 0 && dim > 0,
            "TokenEmbedding: sizes must be positive, got vocab " << vocab << ", dim " << dim);
  add_parameter("weight", Tensor::normal({vocab, dim}, gen, 0.f, 0.02f));
}

ComputeCost TokenEmbedding::forward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape)), d = static_cast<double>(dim_);
  return {0, n * 8 + 2 * n * d * sizeof(float)};
}

ComputeCost TokenEmbedding::backward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape)), d = static_cast<double>(dim_);
  return {n * d, n * 8 + (n * d + static_cast<double>(vocab_) * d) * sizeof(float)};
}

Tensor TokenEmbedding::forward_impl(const Tensor& ids, Context& ctx) {
  GTL_CHECK(ids.dim() == 2 && (ids.dtype() == DType::Int64 || ids.dtype() == DType::Int32),
            "TokenEmbedding '" << path() << "': expected integer ids [B, T], got "
                               << shape_str(ids.shape()) << " " << dtype_name(ids.dtype()));
  const Tensor flat = ids.reshape({ids.numel()});
  ctx.saved = {flat};
  return ops::embedding(weight().value, flat).reshape({ids.size(0), ids.size(1), dim_});
}

Tensor TokenEmbedding::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const Tensor& ids = ctx.saved.at(0);
  Tensor d = cast_to(dy, DType::Float32).reshape({ids.numel(), dim_});
  write_grad(weight(), ops::embedding_backward(d, ids, vocab_), mode);
  return Tensor();  // integer ids have no gradient
}

}  // namespace gtl::nn
