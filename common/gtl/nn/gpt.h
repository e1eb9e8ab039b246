// GPT: a decoder-only transformer language model (GPT-2's architecture, small).
//
//   ids [B, T] -> wte(ids) + wpe[0..T)             token_embedding.h, position_embedding.h
//              -> L x GPTBlock                      gpt_block.h (child "h.0", "h.1", ...)
//              -> LayerNorm                         child "ln_f"
//              -> logits = h W^T   [B*T, V]         W = wte's table (tied, default) or an
//                                                   untied Linear(D, V, no bias), child "head"
// The cross-entropy of logits row b*T+t against ids[b, t+1] is the next-token loss (the trainer
// pairs them: data/text_dataset.h).
//
// Why tie the head to the embedding (Press & Wolf 2017, GPT-2): the same V x D table maps tokens
// to vectors and vectors back to token scores, saving V*D parameters and training faster on small
// data. The table's gradient then has two parts: the head's (dlogits^T h, a GEMM) and the
// embedding's scatter-add. Backward writes the head's part first (with the caller's GradMode)
// and runs the embedding's backward in Accumulate mode, so the table's grad_ready fires once,
// when its gradient is final (module.h). The parameter is listed once ("wte.weight").
//
// Memory of one training step (docs/core.md, "A small GPT", states it term by term and
// common/tests/nn/gpt_memory_test.cpp checks it against the allocator for several shapes).
//
// Decoding: forward_cached(ids, cache) runs only the new positions against a KVCache (kv_cache.h)
// and returns their logits; on the CPU they equal a full forward's rows bit for bit.
//
// checkpoint / checkpoint_blocks wrap blocks in ActivationCheckpoint (activation_checkpoint.h),
// exactly as for the MLP's residual blocks: same gradients, fewer bytes held.
#pragma once

#include <vector>

#include "gtl/nn/kv_cache.h"
#include "gtl/nn/module.h"

namespace gtl::nn {

struct GPTConfig {
  int64_t vocab = 256;   // byte-level tokenizer (data/byte_tokenizer.h)
  int64_t context = 64;  // positions the model knows (wpe's rows): the longest sequence
  int64_t dim = 64;      // D, the residual stream's width
  int64_t layers = 2;    // L blocks
  int64_t heads = 4;     // H, dividing D
  bool tie_head = true;  // head = wte's table (default) or its own Linear
  bool checkpoint = false;
  std::vector<int64_t> checkpoint_blocks;
  uint64_t seed = 0;
};

class GPTBlock;
class TokenEmbedding;
class PositionEmbedding;

class GPT final : public Module {
 public:
  explicit GPT(const GPTConfig& config);

  const GPTConfig& config() const { return config_; }
  int64_t head_dim() const { return config_.dim / config_.heads; }

  // A cache for `batch` sequences of up to max_len (<= context) positions, in the current
  // precision policy's compute dtype, on `device` (where the parameters are).
  KVCache make_cache(int64_t batch, int64_t max_len, Device device) const;
  // ids [B, t] (the next t positions of each sequence) -> logits [B*t, V] in the compute dtype.
  Tensor forward_cached(const Tensor& ids, KVCache& cache);

  // The tied head's GEMM (its own work; the untied head is a Linear child that reports its own):
  //   forward: flops 2*B*T*D*V; bytes (h + W + logits) in the compute dtype
  //   backward: flops 4*B*T*D*V; bytes (dlogits + W + dh) + (dlogits + h + dW)
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& ids, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dlogits, GradMode mode) override;

 private:
  Tensor head_forward(const Tensor& h, Context& ctx);  // [N, D] float32 -> [N, V]

  GPTConfig config_;
  TokenEmbedding* wte_ = nullptr;
  PositionEmbedding* wpe_ = nullptr;
  std::vector<GPTBlock*> blocks_;  // the blocks themselves, also when checkpointed
  Module* ln_f_ = nullptr;
  Module* head_ = nullptr;  // untied only
};

}  // namespace gtl::nn
