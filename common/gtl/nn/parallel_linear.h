// ParallelLinear: one tensor-parallel (TP) rank's shard of a Linear, y = x W^T + b, with the
// communication Megatron-LM puts inside the layer (its conjugate operators f and g).
//
//   Split::Column   W cut by OUTPUT features: this rank holds rows [out/k, in] of W (and of b).
//                   Forward: the whole x [N, in], the same on every rank -> this rank's columns of
//                   y [N, out/k]; nothing sent (f). Backward: this rank's columns of dy -> its
//                   partial dx [N, in], ALL-REDUCED over the group (f's backward), and its shard's
//                   dW, db.
//   Split::Row      W cut by INPUT features: this rank holds columns [out, in/k] of W and all of b.
//                   Forward: this rank's columns of x [N, in/k] (a column-parallel layer's output)
//                   -> a partial y, ALL-REDUCED (g), then b added once -> the whole y [N, out],
//                   the same bits on every rank. Backward: the whole dy -> this rank's dx
//                   [N, in/k] and dW; db (whole, the same on every rank); nothing sent.
//
// A column layer feeding a row layer (the MLP; attention's qkv and proj) needs nothing between
// them: one all-reduce forward, one backward. Apart from that all-reduce the layer runs
// nn::Linear's pass on its shard (linear.h, `linear::`: precision, saved input, in-place weight
// gradient), so it allocates, saves and costs what a Linear of its shard's size does. Built from
// the shard's tensors (tensor_parallel.h cuts them from a whole layer); parameters "weight" and,
// when given, "bias". The all-reduce runs in the compute dtype, as Megatron-LM's does.
//
// Sequence parallelism (SP, Megatron-LM's): outside the column/row pairs each rank holds only
// N/k of the N tokens, rows [r N/k, (r+1) N/k) of the stream (the LayerNorms, the residual adds:
// token by token work, done once instead of k times). The all-reduce then splits in its two
// halves, at the pair's two ends:
//   Column + SP   x is this rank's N/k rows: ALL-GATHERED into the whole [N, in] first (saved
//                 whole, for dW); backward: the partial dx is REDUCE-SCATTERED to its N/k rows.
//   Row + SP      the partial y is REDUCE-SCATTERED to this rank's N/k rows, then b added;
//                 backward: dy's N/k rows are ALL-GATHERED first, so db (and dW, dx) come from
//                 every token: the same whole bias gradient on every rank, nothing to sum.
// The same bytes cross as with the all-reduce (a ring all-reduce IS a reduce-scatter and an
// all-gather); what SP saves is memory and the token-wise work. k must divide N.
#pragma once

#include "gtl/distributed/communicator.h"
#include "gtl/nn/module.h"

namespace gtl::nn {

class ParallelLinear final : public Module {
 public:
  enum class Split { Column, Row };

  // weight [out_local, in] (Column) or [out, in_local] (Row); bias [out_local] (Column), [out]
  // (Row), or undefined for none. The tensors become the parameters (not copied).
  ParallelLinear(Split split, Tensor weight, Tensor bias, dist::Communicator& tp,
                 bool sequence_parallel = false);

  Split split() const { return split_; }
  bool sequence_parallel() const { return sequence_parallel_; }
  int64_t in_features() const { return in_; }    // of the shard: in, or in/k for Row
  int64_t out_features() const { return out_; }  // of the shard: out/k for Column, or out

  // Linear's costs on the shard's sizes, on all N rows (the collectives are traced by the
  // communicator).
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  // SP's two collectives along the rows: [N/k, c] -> [N, c], and [N, c] -> [N/k, c].
  Tensor gather_rows(const Tensor& x) const;
  Tensor scatter_rows(const Tensor& x) const;

  Split split_;
  dist::Communicator& tp_;
  bool sequence_parallel_;
  int64_t in_, out_;
  bool has_bias_;
};

}  // namespace gtl::nn
