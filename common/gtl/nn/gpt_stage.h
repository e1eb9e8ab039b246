// GPTStage: one pipeline stage of the core's GPT (gpt.h), built alone.
//
//   nn::GPTStage stage(config, s, pp);     stage s of pp equal stages (pp divides config.layers)
//
//   stage 0           ids [B, T] int64  -> wte, wpe, its blocks          -> x [B, T, D] float32
//   a middle stage    x [B, T, D]       -> its blocks                    -> x [B, T, D]
//   the last stage    x [B, T, D]       -> its blocks, ln_f, the head    -> logits [B*T, V]
//   (pp = 1: the one stage is the whole GPT: ids -> logits)
//
// Its blocks are [s L/pp, (s+1) L/pp), named as in the whole model ("h.<l>"), with bitwise the
// weights GPT(config) has: each layer draws its initial values at the generator offset the whole
// model's construction reaches it at (like models.h's make_stage), so a stage allocates only its
// own parameters (and their gradients, when built) and running the stages one after the other,
// the activation passed from each to the next, is the whole model's forward and its gradients.
//
// The tied head across stages (Megatron-LM's rule): with a tied head and pp > 1, the last stage
// holds its OWN copy of the token table (child "wte", parameter "wte.weight", the same initial
// values as stage 0's) for the head to read. Stage 0's copy gets the embedding's part of the
// table's gradient, the last stage's the head's part; the whole model's gradient is their sum,
// so a pipeline all-reduces the two copies' gradients between the first and the last stage (the
// "embedding group") before the optimizer, and both copies stay equal after every step. Only
// that sum's rounding differs from GPT, which adds the embedding's part onto the head's in place.
//
// Tensor parallelism: given a TP group of k > 1 ranks (`tp`), the stage holds this rank's
// shards of its layers (tensor_parallel.h: heads, MLP columns and the vocabulary cut in k; the
// LayerNorms and the position table whole), cut from the whole layers it draws as above, so its
// parameters are slices of GPT(config)'s, under the same names. The last stage's output is then
// this rank's columns of the logits, [B*T, V/k], for nn::VocabParallelCrossEntropy
// (vocab_parallel.h); the head's dx is all-reduced over the group. Every rank of the group gets
// and returns the same activations (the stage's input and output are whole), so a pipeline of TP
// stages sends between stages exactly what it sends without TP.
//
// Sequence parallelism (`sequence_parallel`, with a TP group; tensor_parallel.h): the stream
// between the blocks is cut by tokens too. A rank holds N/k of a micro-batch's N = B*T tokens,
// rows [r N/k, (r+1) N/k) of the flattened stream, as [B, T/k, D] (k must divide T): stage 0
// takes its rows after adding the positions (backward: gathers the rows' gradients), the last
// stage's ln_f normalises its rows and the head gathers them (the logits, [B*T, V/k], have every
// token), and a stage's input and output are its rows, so stages send 1/k of the bytes.
//
// Memory: each part allocates and saves exactly what it does inside GPT (docs/core.md, "Memory
// of a training step"): the last stage's backward holds the head's dx and ln_f's dx through its
// blocks, as GPT's does; a non-last stage's backward holds only the gradient it was given.
#pragma once

#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/module.h"

namespace gtl::nn {

class GPTStage final : public Module {
 public:
  // Throws gtl::Error unless config is a valid GPT config, stages >= 1 divides config.layers and
  // 0 <= stage < stages; with a TP group of k > 1, unless k divides the heads and the vocabulary.
  // A group of one rank is no TP (the whole layers, no communication).
  GPTStage(const GPTConfig& config, int stage, int stages, dist::Communicator* tp = nullptr,
           bool sequence_parallel = false);

  const GPTConfig& config() const { return config_; }
  int stage() const { return stage_; }
  int stages() const { return stages_; }
  int tp_size() const { return tp_ != nullptr ? tp_->world_size() : 1; }
  bool sequence_parallel() const { return sp_; }
  bool is_first() const { return stage_ == 0; }
  bool is_last() const { return stage_ == stages_ - 1; }
  int64_t first_block() const { return first_block_; }
  int64_t end_block() const { return first_block_ + static_cast<int64_t>(blocks_.size()); }

  // The token table this stage holds when the head is tied and stages > 1 (stage 0's, read by the
  // embedding; the last stage's copy, read by the head): the parameter whose gradient the
  // embedding group all-reduces. nullptr on a stage that holds none, and with one stage (the
  // table is not split then).
  const ParamRef* tied_table() const;

  // The tied head's GEMM on the last stage, as GPT reports it (zero elsewhere).
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  bool reads_table() const { return is_last() && config_.tie_head; }
  const ParamRef& table() const;  // wte_'s weight: the whole table, or this rank's rows
  GPTConfig config_;
  int stage_, stages_;
  // Under SP: this rank's rows of a stream [B, T, D] -> [B, T/k, D], and back (all-gathered).
  Tensor my_rows(const Tensor& x) const;
  Tensor all_rows(const Tensor& x) const;
  dist::Communicator* tp_ = nullptr;  // a TP group of k > 1, or none
  bool sp_ = false;                   // sequence parallelism over tp_
  int64_t first_block_ = 0;
  Module* wte_ = nullptr;  // stage 0's embedding, or the last stage's copy of the tied table
                           // (TokenEmbedding, or VocabParallelEmbedding under TP)
  Module* wpe_ = nullptr;
  std::vector<Module*> blocks_;  // as children (checkpointed ones wrapped)
  Module* ln_f_ = nullptr;
  Module* head_ = nullptr;  // untied, last stage only (a column-parallel one under TP)
};

}  // namespace gtl::nn
