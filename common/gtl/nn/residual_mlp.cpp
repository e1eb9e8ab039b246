// The residual MLP block: LN -> Linear(4x) -> GELU -> Linear -> + x (see residual_mlp.h).
#include "gtl/nn/residual_mlp.h"

#include "gtl/nn/activation.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/precision.h"
#include "gtl/ops/elementwise.h"

namespace gtl::nn {

ResidualMLP::ResidualMLP(int64_t dim, Generator& gen, int64_t expansion)
    : Module("residual_mlp"), dim_(dim) {
  add_child("ln", std::make_unique<LayerNorm>(dim));
  add_child("fc1", std::make_unique<Linear>(dim, expansion * dim, gen));
  add_child("gelu", std::make_unique<GELU>());
  add_child("fc2", std::make_unique<Linear>(expansion * dim, dim, gen));
}

ResidualMLP::ResidualMLP(int64_t dim, std::unique_ptr<Module> ln, std::unique_ptr<Module> fc1,
                         std::unique_ptr<Module> fc2)
    : Module("residual_mlp"), dim_(dim) {
  add_child("ln", std::move(ln));
  add_child("fc1", std::move(fc1));
  add_child("gelu", std::make_unique<GELU>());
  add_child("fc2", std::move(fc2));
}

ComputeCost ResidualMLP::forward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape));
  return {n, 3 * n * sizeof(float)};
}

Tensor ResidualMLP::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == dim_, "ResidualMLP '" << path() << "': expected [N, "
                                                               << dim_ << "], got "
                                                               << shape_str(x.shape()));
  ctx.children.resize(children_.size());
  Tensor h = x;
  for (std::size_t i = 0; i < children_.size(); ++i) h = children_[i]->forward(h, ctx.children[i]);
  // The residual connection, in float32 whatever the policy (residual_mlp.h).
  return ops::add(cast_to(x, DType::Float32), cast_to(h, DType::Float32));
}

Tensor ResidualMLP::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  // d(x + f(x))/dx = dy + f'(x)^T dy: the gradient flows through the branch and around it.
  Tensor d = dy;
  for (std::size_t i = children_.size(); i-- > 0;) {
    d = children_[i]->backward(ctx.children[i], d, mode);
  }
  return ops::add(cast_to(dy, ctx.input_dtype), cast_to(d, ctx.input_dtype));
}

}  // namespace gtl::nn
