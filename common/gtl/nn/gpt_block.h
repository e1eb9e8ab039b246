// GPTBlock: one pre-LayerNorm transformer block, GPT-2's.
//
//   x1 = x + attn(ln1(x))              (child "ln1", child "attn": causal_self_attention.h)
//   y  = x1 + fc2(gelu(fc1(ln(x1))))   (child "mlp": residual_mlp.h, whose LayerNorm is "mlp.ln")
//
// Pre-LN (normalise the branch's input, not the sum) keeps the residual stream an identity path
// from the embeddings to the head, which is why deep GPTs train without warm-up tricks. The
// residual stream is float32 under every precision policy, as in ResidualMLP: the attention
// branch's output (compute dtype) is widened before the add. Input and output [B, T, D] float32.
//
// Saves nothing itself (the adds need nothing for backward); its children save theirs. Per
// block, in elements of the compute dtype c unless noted (see gpt.h for the whole model):
//   ln1: x, mean, rstd (float32: B*T*D + 2*B*T)      attn: 5*B*T*D + B*H*T^2
//   mlp: ln input, mean, rstd (float32: B*T*D + 2*B*T), fc1 input B*T*D, GELU input 4*B*T*D,
//        fc2 input 4*B*T*D
#pragma once

#include "gtl/nn/kv_cache.h"
#include "gtl/nn/module.h"

namespace gtl::nn {

class GPTBlock final : public Module {
 public:
  GPTBlock(int64_t dim, int64_t heads, Generator& gen);
  // From given children "ln1", "attn", "mlp": the tensor-parallel shard of a whole block
  // (tensor_parallel.h). Such a block has no decoding path (forward_cached throws).
  GPTBlock(int64_t dim, std::unique_ptr<Module> ln1, std::unique_ptr<Module> attn,
           std::unique_ptr<Module> mlp);

  // The decoding path: x [B, t, D], new positions only; layer `layer` of the cache.
  Tensor forward_cached(const Tensor& x, KVCache& cache, int64_t layer);

  // Its own work: the attention residual add, 1 flop per element, x and the branch read, y
  // written (float32). Backward adds the two gradients: the same. (The MLP's add is the mlp's.)
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override {
    return forward_cost(input_shape);
  }

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  int64_t dim_;
};

}  // namespace gtl::nn
