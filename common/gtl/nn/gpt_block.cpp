// GPTBlock: LN -> attention -> + x, then the residual MLP (see gpt_block.h).
#include "gtl/nn/gpt_block.h"

#include "gtl/nn/causal_self_attention.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/precision.h"
#include "gtl/nn/residual_mlp.h"
#include "gtl/ops/elementwise.h"

namespace gtl::nn {

GPTBlock::GPTBlock(int64_t dim, int64_t heads, Generator& gen) : Module("gpt_block"), dim_(dim) {
  add_child("ln1", std::make_unique<LayerNorm>(dim));
  add_child("attn", std::make_unique<CausalSelfAttention>(dim, heads, gen));
  add_child("mlp", std::make_unique<ResidualMLP>(dim, gen));
}

GPTBlock::GPTBlock(int64_t dim, std::unique_ptr<Module> ln1, std::unique_ptr<Module> attn,
                   std::unique_ptr<Module> mlp)
    : Module("gpt_block"), dim_(dim) {
  add_child("ln1", std::move(ln1));
  add_child("attn", std::move(attn));
  add_child("mlp", std::move(mlp));
}

ComputeCost GPTBlock::forward_cost(const Shape& input_shape) const {
  const double n = static_cast<double>(shape_numel(input_shape));
  return {n, 3 * n * sizeof(float)};
}

Tensor GPTBlock::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() == 3 && x.size(2) == dim_, "GPTBlock '" << path() << "': expected [B, T, "
                                                            << dim_ << "], got "
                                                            << shape_str(x.shape()));
  const int64_t b = x.size(0), t = x.size(1);
  ctx.children.resize(3);
  Tensor h = children_[0]->forward(x, ctx.children[0]);
  h = children_[1]->forward(h, ctx.children[1]);
  Tensor x1 = ops::add(cast_to(x, DType::Float32), cast_to(h, DType::Float32));
  return children_[2]->forward(x1.reshape({b * t, dim_}), ctx.children[2]).reshape({b, t, dim_});
}

Tensor GPTBlock::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const int64_t b = ctx.input_shape[0], t = ctx.input_shape[1];
  // The MLP's backward already adds its own residual path: d1 = dL/dx1.
  Tensor d1 = children_[2]
                  ->backward(ctx.children[2], dy.reshape({b * t, dim_}), mode)
                  .reshape({b, t, dim_});
  Tensor dh = children_[1]->backward(ctx.children[1], d1, mode);
  dh = children_[0]->backward(ctx.children[0], dh, mode);
  return ops::add(cast_to(d1, ctx.input_dtype), cast_to(dh, ctx.input_dtype));
}

Tensor GPTBlock::forward_cached(const Tensor& x, KVCache& cache, int64_t layer) {
  const int64_t b = x.size(0), t = x.size(1);
  Context scratch_ln, scratch_mlp;
  auto* attn = dynamic_cast<CausalSelfAttention*>(children_[1].get());
  GTL_CHECK(attn != nullptr && attn->width() == dim_,
            "GPTBlock '" << path() << "': a tensor-parallel shard has no decoding path");
  Tensor h = children_[0]->forward(x, scratch_ln);
  h = attn->forward_cached(h, cache, layer);
  Tensor x1 = ops::add(cast_to(x, DType::Float32), cast_to(h, DType::Float32));
  return children_[2]->forward(x1.reshape({b * t, dim_}), scratch_mlp).reshape({b, t, dim_});
}

}  // namespace gtl::nn
