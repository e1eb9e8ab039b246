// The GPT model: embeddings, blocks, final LayerNorm, tied or untied head (see gpt.h).
#include "gtl/nn/gpt.h"

#include <algorithm>

#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/gpt_block.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/position_embedding.h"
#include "gtl/nn/precision.h"
#include "gtl/nn/tied_head.h"
#include "gtl/nn/token_embedding.h"

namespace gtl::nn {

GPT::GPT(const GPTConfig& config) : Module("gpt"), config_(config) {
  const GPTConfig& c = config_;
  GTL_CHECK(c.vocab > 0 && c.context > 0 && c.layers >= 0 && c.heads > 0 && c.dim > 0 &&
                c.dim % c.heads == 0,
            "GPT: expected positive vocab, context, dim, heads (heads dividing dim) and layers "
            ">= 0, got vocab "
                << c.vocab << ", context " << c.context << ", dim " << c.dim << ", heads "
                << c.heads << ", layers " << c.layers);
  for (int64_t b : c.checkpoint_blocks) {
    GTL_CHECK(b >= 0 && b < c.layers,
              "GPT: checkpoint_blocks lists block " << b << ", but the model has " << c.layers);
  }
  Generator gen(c.seed);
  wte_ = static_cast<TokenEmbedding*>(
      &add_child("wte", std::make_unique<TokenEmbedding>(c.vocab, c.dim, gen)));
  wpe_ = static_cast<PositionEmbedding*>(
      &add_child("wpe", std::make_unique<PositionEmbedding>(c.context, c.dim, gen)));
  for (int64_t l = 0; l < c.layers; ++l) {
    auto block = std::make_unique<GPTBlock>(c.dim, c.heads, gen);
    blocks_.push_back(block.get());
    const bool checkpointed =
        c.checkpoint || std::find(c.checkpoint_blocks.begin(), c.checkpoint_blocks.end(), l) !=
                            c.checkpoint_blocks.end();
    std::unique_ptr<Module> m = std::move(block);
    if (checkpointed) m = std::make_unique<ActivationCheckpoint>(std::move(m));
    add_child("h." + std::to_string(l), std::move(m));
  }
  ln_f_ = &add_child("ln_f", std::make_unique<LayerNorm>(c.dim));
  if (!c.tie_head) {
    head_ = &add_child("head", std::make_unique<Linear>(c.dim, c.vocab, gen, /*bias=*/false));
  }
}

ComputeCost GPT::forward_cost(const Shape& input_shape) const {
  if (!config_.tie_head) return {};
  return tied_head::forward_cost(shape_numel(input_shape), config_.dim, config_.vocab);
}

ComputeCost GPT::backward_cost(const Shape& input_shape) const {
  if (!config_.tie_head) return {};
  return tied_head::backward_cost(shape_numel(input_shape), config_.dim, config_.vocab);
}

Tensor GPT::head_forward(const Tensor& h, Context& ctx) {
  if (head_ != nullptr) {
    ctx.children.back().clear();
    return head_->forward(h, ctx.children.back());
  }
  return tied_head::forward(h, wte_->weight(), ctx);
}

Tensor GPT::forward_impl(const Tensor& ids, Context& ctx) {
  GTL_CHECK(ids.dim() == 2 && ids.size(1) <= config_.context,
            "GPT: expected ids [B, T] with T <= context " << config_.context << ", got "
                                                          << shape_str(ids.shape()));
  const int64_t b = ids.size(0), t = ids.size(1), n = children_.size();
  ctx.children.resize(static_cast<std::size_t>(n));
  Tensor x = ids;
  // Every child but the untied head, in order: wte, wpe, blocks, ln_f.
  const int64_t body = head_ != nullptr ? n - 1 : n;
  for (int64_t i = 0; i < body; ++i) {
    x = children_[static_cast<std::size_t>(i)]->forward(x,
                                                        ctx.children[static_cast<std::size_t>(i)]);
  }
  return head_forward(x.reshape({b * t, config_.dim}), ctx);
}

Tensor GPT::backward_impl(Context& ctx, const Tensor& dlogits, GradMode mode) {
  const int64_t b = ctx.input_shape[0], t = ctx.input_shape[1];
  const std::size_t n = children_.size();
  Tensor dh;
  if (head_ != nullptr) {
    dh = head_->backward(ctx.children.back(), dlogits, mode);
  } else {
    // The head's part of the table's gradient, written with the caller's mode; the embedding's
    // scatter-add is accumulated onto it below.
    dh = tied_head::backward(ctx, dlogits, wte_->weight(), mode, &Module::write_grad);
  }
  Tensor d = cast_to(dh, DType::Float32).reshape({b, t, config_.dim});
  const std::size_t body = head_ != nullptr ? n - 1 : n;
  for (std::size_t i = body; i-- > 1;) d = children_[i]->backward(ctx.children[i], d, mode);
  children_[0]->backward(ctx.children[0], d, config_.tie_head ? GradMode::Accumulate : mode);
  return Tensor();  // the ids have no gradient
}

KVCache GPT::make_cache(int64_t batch, int64_t max_len, Device device) const {
  GTL_CHECK(max_len <= config_.context,
            "GPT::make_cache: max_len " << max_len << " exceeds the context " << config_.context);
  return KVCache(std::max<int64_t>(config_.layers, 1), batch, config_.heads, head_dim(), max_len,
                 current_precision().compute, device);
}

Tensor GPT::forward_cached(const Tensor& ids, KVCache& cache) {
  GTL_CHECK(ids.dim() == 2,
            "GPT::forward_cached: expected ids [B, t], got " << shape_str(ids.shape()));
  const int64_t b = ids.size(0), t = ids.size(1);
  Context scratch;
  Tensor x = wpe_->add_positions(wte_->forward(ids, scratch), cache.length());
  for (std::size_t l = 0; l < blocks_.size(); ++l) {
    x = blocks_[l]->forward_cached(x, cache, static_cast<int64_t>(l));
  }
  cache.advance(t);
  x = ln_f_->forward(x, scratch).reshape({b * t, config_.dim});
  Context head_ctx;
  head_ctx.children.resize(children_.size());
  return head_forward(x, head_ctx);
}

}  // namespace gtl::nn
