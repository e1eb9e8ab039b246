// The vocabulary cut across a tensor-parallel (TP) group of k ranks, as Megatron-LM cuts it: the
// token table [V, D] by rows, rank r holding rows [r V/k, (r+1) V/k); the head that reads the
// table then produces only those columns of the logits, [N, V/k], and the loss combines three
// numbers per row across the group instead of ever assembling [N, V]. CPU tensors, float32.
#pragma once

#include "gtl/distributed/communicator.h"
#include "gtl/nn/module.h"

namespace gtl::nn {

// ids [B, T] int64 (any id in [0, vocab)) -> [B, T, D] float32, every position its row of the
// whole table, the same bits on every rank: each rank writes the rows it holds and zeros
// elsewhere, and one all-reduce of [N, D] sums them (exactly one rank contributes each row).
// Backward: dy [B, T, D], the same on every rank -> the gradient of this rank's rows only,
// positions added in order; nothing sent. Saves the ids. Parameter "weight" [V/k, D]: `rows`,
// the rows [first_row, first_row + rows.size(0)) of the whole table (not copied).
class VocabParallelEmbedding final : public Module {
 public:
  VocabParallelEmbedding(Tensor rows, int64_t vocab, int64_t first_row, dist::Communicator& tp);

  const ParamRef& weight() const { return params_[0]; }
  int64_t vocab() const { return vocab_; }
  int64_t first_row() const { return first_; }

  // As TokenEmbedding's, on the rank's rows (the lookup does no arithmetic).
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& ids, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  dist::Communicator& tp_;
  int64_t vocab_, first_, dim_;
};

// The mean cross-entropy of logits [N, V] against labels [N] when this rank holds only its
// columns [r V/k, (r+1) V/k) of the logits, local [N, V/k]. Forward: three all-reduces of N
// floats, in this order: each row's max (Max), the label's logit (Sum: only its owner
// contributes), the sum of exp(logit - max) (Sum); returns the loss [1], the same on every rank.
// Saves the local logits, the labels and each row's log-sum-exp [N] (4N bytes beyond the
// logits). Backward: d(dloss * loss)/d(local logits) [N, V/k], nothing sent; consumes ctx.
// Half-precision logits (a bf16 head's) work as in CrossEntropyLoss: the loss is computed from,
// and saves, a float32 copy (4 N V/k bytes), and the gradient comes back in the logits' dtype.
class VocabParallelCrossEntropy {
 public:
  explicit VocabParallelCrossEntropy(dist::Communicator& tp) : tp_(tp) {}
  Tensor forward(const Tensor& local_logits, const Tensor& labels, Context& ctx) const;
  Tensor backward(Context& ctx, float dloss = 1.f) const;

 private:
  dist::Communicator& tp_;
};

}  // namespace gtl::nn
