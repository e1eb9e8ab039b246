// Lab 08, tensor parallelism: the weight matrices of one GPT layer cut across the k ranks of a
// tensor-parallel (TP) group, as Megatron-LM does, so that each rank holds and multiplies 1/k of
// them and the ranks exchange activations instead of weights.
//
// This header is part of the pristine lab (labs/08-tensor-parallel/include): do not edit it. Your
// files are in starter/08-tensor-parallel/, one per TODO; the map from TODO to file, test and check
// is in the handout, labs/08-tensor-parallel/README.md. Everything runs on in-process ranks
// (gtl::dist::run_ranks) on the CPU; `tp` below is the communicator of the TP group (the whole
// world in steps 1-4; in step 5, one of the groups of a dp x tp world).
//
// Every sharded layer is built FROM the core's unsharded layer (nn::Linear,
// nn::CausalSelfAttention, nn::TokenEmbedding): rank r copies its slice of the full weights, so TP
// = k starts from exactly the weights of one process and the tests can compare the two.
//
// clang-format off
//   step  what                                   rank r holds
//   1     ColumnParallelLinear                   rows tp_slice(out) of W and of b
//         RowParallelLinear                      columns tp_slice(in) of W, all of b
//         ParallelMLP = column, GELU, row        fc1's rows, fc2's columns
//   2     ParallelAttention (heads split)        its heads' qkv rows, proj's columns
//   3     VocabParallelEmbedding                 rows tp_slice(V) of the token table
//         VocabParallelCrossEntropy              its vocabulary slice of the logits
//   4     gather_sequence, scatter_sequence      positions tp_slice(T) of every sequence
//         SequenceParallelMLP                    the MLP's shards as in 1; LayerNorm, fc2's bias
//                                                replicated; x and y on its positions only
//   5     make_dp_tp_groups                      its TP group and its DP group of the world
//         finalize_gradients                     its parameters' gradients of the whole batch
//   6     tp_step_figures, largest_tp_size       (nothing: a simulation of traced steps)
// clang-format on
// Where the ranks must exchange data, in which direction and how much, is what the steps ask you
// to work out from the contracts below; the traffic checks count it (handout, "How you are
// graded").
// Step 5 (DP x TP on the process grid) takes `tp` from a 2-D grid of groups; step 6 simulates
// traced TP steps inside a node and across nodes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/distributed/timeline.h"
#include "gtl/distributed/trace.h"
#include "gtl/nn/causal_self_attention.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/module.h"
#include "gtl/nn/residual_mlp.h"
#include "gtl/nn/token_embedding.h"
#include "gtl/tensor/tensor.h"

namespace lab08 {

using gtl::Tensor;
using gtl::dist::Communicator;
namespace nn = gtl::nn;

// The slice [begin, end) of `n` things (output features, heads, vocabulary rows) that rank
// `rank` of a TP group of `size` holds: n / size contiguous things, rank 0 first. Throws
// gtl::Error naming `what` unless size >= 1 and size divides n (this lab refuses rather than pads).
struct Slice {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};
Slice tp_slice(int64_t n, int rank, int size, const char* what);

// ---- 1. Column- and row-parallel linear layers (parallel_linear.cpp) ---------------------------
// y = x W^T + b with W [out, in] cut by OUTPUT features: rank r holds rows tp_slice(out) of W and
// of b. Forward: the WHOLE input x [N, in], the same on every rank -> this rank's columns of y,
// [N, out / k]. Backward: this rank's columns of dy, [N, out / k] -> the FULL dx [N, in], the same
// on every rank (what the layer in front of it needs), and this rank's weight and bias
// gradients. Parameters "weight" [out/k, in], "bias" [out/k]; saved: x.
class ColumnParallelLinear final : public nn::Module {
 public:
  ColumnParallelLinear(const nn::Linear& full, Communicator& tp);

 protected:
  Tensor forward_impl(const Tensor& x, nn::Context& ctx) override;
  Tensor backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) override;

 private:
  Communicator& tp_;
  int64_t in_, out_local_;
};

// y = x W^T + b with W [out, in] cut by INPUT features: rank r holds columns tp_slice(in) of W and
// all of b. Forward: x_r [N, in / k], this rank's columns of the input (a column-parallel layer's
// output) -> the FULL y [N, out], the same bits on every rank. Backward: the full dy [N, out],
// the same on every rank -> dx_r [N, in / k], this rank's columns of dx, and this rank's weight
// gradient and the bias gradient. Parameters "weight" [out, in/k], "bias" [out]; saved: x_r.
class RowParallelLinear final : public nn::Module {
 public:
  RowParallelLinear(const nn::Linear& full, Communicator& tp);

 protected:
  Tensor forward_impl(const Tensor& x, nn::Context& ctx) override;
  Tensor backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) override;

 private:
  Communicator& tp_;
  int64_t in_local_, out_;
};

// The transformer MLP, fc2(gelu(fc1(x))), x [N, D] -> [N, D]: fc1 column-parallel, GELU on each
// rank's own columns (elementwise), fc2 row-parallel. Children "fc1", "gelu", "fc2".
// (src/parallel_mlp.cpp)
class ParallelMLP final : public nn::Module {
 public:
  ParallelMLP(const nn::Linear& fc1, const nn::Linear& fc2, Communicator& tp);

 protected:
  Tensor forward_impl(const Tensor& x, nn::Context& ctx) override;
  Tensor backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) override;
};

// ---- 2. Attention split by heads (attention_shard.cpp) -----------------------------------------
// Rank r's part of a CausalSelfAttention of D = dim, H heads of d = D / H: the heads
// tp_slice(H, ...) and everything of theirs.
//   qkv_weight [3 * D/k, D], qkv_bias [3 * D/k]: the rows of the fused qkv Linear that produce
//       this rank's heads, in the order the core's qkv Linear of H/k heads would hold them
//   proj_weight [D, D/k]: the columns of proj's weight that multiply this rank's heads' outputs
//   heads: H / k
// Throws gtl::Error, naming both numbers, when k does not divide H (a head is never cut).
struct AttentionShard {
  Tensor qkv_weight, qkv_bias, proj_weight;
  int64_t heads = 0;
};
AttentionShard shard_attention(const nn::CausalSelfAttention& full, int tp_rank, int tp_size);

// The attention of x [B, T, D] with each rank running its own heads (src/parallel_attention.cpp,
// built from shard_attention): the rank's share of qkv, its heads' attention (the core's reference
// path: batched GEMMs, causal mask, softmax) and its share of proj, the group's communication
// written inline: one all-reduce [B*T, D] forward, one backward. Output [B, T, D].
class ParallelAttention final : public nn::Module {
 public:
  ParallelAttention(const nn::CausalSelfAttention& full, Communicator& tp);
  int64_t local_heads() const { return heads_; }

 protected:
  Tensor forward_impl(const Tensor& x, nn::Context& ctx) override;
  Tensor backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) override;

 private:
  Communicator& tp_;
  int64_t dim_, heads_, head_dim_;
};

// ---- 3. Vocabulary-parallel embedding and loss (vocab_parallel.cpp) ----------------------------
// The token table [V, D] cut by rows: rank r holds rows tp_slice(V) ("weight" [V/k, D]). Forward:
// ids [B, T] (int64, any value in [0, V)) -> [B, T, D] float32, the full lookup on every rank,
// each position exactly its row of the table, bit for bit; an id outside [0, V) makes every rank
// throw gtl::Error naming the id and V. Backward: dy [B, T, D], the same on every rank -> the
// gradient of this rank's rows of the table, added in position order like
// ops::embedding_backward; returns an undefined tensor (ids have no gradient). Saved: the ids.
class VocabParallelEmbedding final : public nn::Module {
 public:
  VocabParallelEmbedding(const nn::TokenEmbedding& full, Communicator& tp);

 protected:
  Tensor forward_impl(const Tensor& ids, nn::Context& ctx) override;
  Tensor backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) override;

 private:
  Communicator& tp_;
  int64_t vocab_, dim_;
  Slice rows_;
};

// The mean cross-entropy of logits [N, V] against labels [N] (int64, in [0, V)) when rank r holds
// only the columns tp_slice(V) of the logits, local_logits [N, V/k] float32 (the head of a
// vocabulary-parallel GPT produces exactly that). The full logits are NEVER assembled: per row,
// three numbers are combined across the group, three all-reduces of N floats in this order: the
// row's max, the label's logit, the sum of exp(logit - max) over the row (which reduction each
// needs, and what each rank contributes, is the step). Returns the loss [1] float32, the same on
// every rank; a label outside [0, V) makes every rank throw gtl::Error naming the label and V.
// Beyond its input, a rank allocates per-row vectors and at most ONE [N, V/k] float buffer
// (backward's result): the allocator's peak is checked.
class VocabParallelCrossEntropy {
 public:
  explicit VocabParallelCrossEntropy(Communicator& tp) : tp_(tp) {}
  Tensor forward(const Tensor& local_logits, const Tensor& labels, nn::Context& ctx) const;
  // d(dloss * loss) / d(local_logits), [N, V/k] float32; no communication. Consumes ctx.
  Tensor backward(nn::Context& ctx, float dloss = 1.f) const;

 private:
  Communicator& tp_;
};

// ---- 4. Sequence parallelism (sequence_parallel.cpp) -------------------------------------------
// Outside the column/row pairs (LayerNorm, the row-parallel layers' biases, the residual adds)
// every rank of the group above computes the same thing on the same [B, T, D] tensor. Sequence
// parallelism cuts those regions along the SEQUENCE: rank r holds positions tp_slice(T) of every
// sequence, x_r [B, T/k, D] (all B sequences, its T/k positions of each, in order), and the
// group's all-reduce becomes an all-gather and a reduce-scatter of the same bytes. T must be
// divisible by k: this lab refuses otherwise, as Megatron-LM does.

// [B, T/k, D] float32 on every rank, rank r's positions -> [B, T, D], the whole sequence, the
// same on every rank, each position exactly the bits its owner sent. One all-gather of B*T*D
// floats.
Tensor gather_sequence(const Tensor& shard, Communicator& tp);
// [B, T, D] float32 on every rank, each rank's partial sum of the same tensor -> [B, T/k, D], the
// sum over ranks (in rank order, as the deterministic all-reduce adds) of positions tp_slice(T).
// One reduce-scatter of B*T*D floats. Throws gtl::Error naming T and k, before communicating,
// unless k divides T.
Tensor scatter_sequence(const Tensor& partial, Communicator& tp);

// The core's nn::ResidualMLP, y = x + fc2(gelu(fc1(ln(x)))), D -> 4D -> D, with fc1
// column-parallel and fc2 row-parallel as in step 1, and the LayerNorm, fc2's bias and the
// residual add on this rank's positions only. Forward: x_r [B, T/k, D] float32 -> y_r
// [B, T/k, D], rank r's positions of y. Backward: dy_r [B, T/k, D] -> dx_r [B, T/k, D], this
// rank's shard gradients of fc1 and fc2, and the gradients of the replicated parameters
// (ln.weight, ln.bias, fc2.bias): the same on every rank, the gradient of the whole batch.
// Parameters "ln.weight" [D], "ln.bias" [D], "fc1.weight" [4D/k, D], "fc1.bias" [4D/k],
// "fc2.weight" [D, 4D/k], "fc2.bias" [D] (src/sequence_parallel_mlp.cpp cuts them). Saved, and
// nothing else: the LayerNorm's mean and rstd [B*T/k] each, x_r (the caller's tensor), fc1's
// input [B*T, D], fc1's output and GELU's output [B*T, 4D/k] each (not the LayerNorm's own output
// shard once it is gathered, nor anything else a helper returned); the activation-memory check
// counts every byte a rank still holds after forward (handout, TODO 4). The group's traffic:
// forward, the pair's two collectives (one all-gather, one reduce-scatter, each of B*T*D floats,
// where the layer needs them); backward, the backward of each (B*T*D floats each) and one
// all-reduce of D floats per replicated gradient.
class SequenceParallelMLP final : public nn::Module {
 public:
  SequenceParallelMLP(const nn::ResidualMLP& full, Communicator& tp);

 protected:
  Tensor forward_impl(const Tensor& x, nn::Context& ctx) override;
  Tensor backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) override;

 private:
  Communicator& tp_;
  int64_t dim_;
};

// ---- 5. Data x tensor parallelism on the process grid (data_tensor_parallel.cpp) ---------------
// A world of dp * tp ranks runs dp replicas of one tp-way sharded model, each replica on its own
// B/dp sequences of the batch. The ranks are laid out as the core's gtl::dist::ProcessGrid lays
// them out with one pipeline stage: TP innermost, so the tp ranks of a replica are neighbours,
// consecutive world ranks with replica 0 first (one node, NVLink), and a DP group takes one rank
// from each replica.

// 5. Each rank's two groups, split from `world`: `tp`, the tp ranks of its replica (same
// dp_rank), and `dp`, the dp ranks holding the same shard (same tp_rank); in both, the ranks are
// ordered as in the world, so a rank's rank in `tp` is its tp_rank and in `dp` its dp_rank.
// Collective over `world`: every rank calls it with the same tp_size. Throws gtl::Error naming
// the world size and tp_size, before communicating, unless tp_size >= 1 divides the world size.
struct DpTpGroups {
  int tp_rank = 0, dp_rank = 0;
  std::unique_ptr<Communicator> tp, dp;
};
DpTpGroups make_dp_tp_groups(Communicator& world, int tp_size);

// 5. The gradient synchronisation of one training step, after each rank's backward on its
// replica's micro-batch and before the optimizer (Megatron-LM's finalize_model_grads). On entry,
// params[i].grad holds the gradient of the replica's loss, the MEAN over its own B/dp sequences:
// whole over the replica for a sharded parameter; for a TP-replicated one (replicated[i]: the
// LayerNorm's weight and bias, fc2's bias of a sequence-parallel layer), only the contribution
// of this rank's sequence positions. On return every params[i].grad is the gradient of the mean
// over ALL B sequences of the batch: a shard's the same bits on every rank of its DP group, a
// replicated parameter's the same bits on every rank of the world. Communication, and nothing
// else (which collectives, in which group, is the step; the handout's traffic check counts them),
// each group's calls in parameter order.
void finalize_gradients(const std::vector<nn::ParamRef>& params,
                        const std::vector<bool>& replicated, Communicator& tp, Communicator& dp);
// ---- 6. Where TP belongs (tp_placement.cpp) -----------------------------------------------------
// One training step of a TP group, simulated with the core's cost model (gtl/distributed/
// timeline.h, CostModel) from the traces its k ranks recorded: every leaf module's pass (its
// ModuleEnd's flops and mem_bytes) and every synchronous all-reduce of the whole group. Where the
// group sits decides the link its all-reduces cross: inside one node (NVLink) or one rank per node
// (InfiniBand). Nothing here runs on a GPU: the figures are simulated, not measured.
enum class TpPlacement {
  IntraNode,  // the k ranks on one node: model.intra_node (refused when k > model.ranks_per_node)
  InterNode,  // each rank on its own node: model.inter_node (for k > 1)
};
struct TpStepFigures {
  double step_time = 0;      // seconds: the group's simulated step, forward and backward
  double comm_time = 0;      // seconds: the sum of the all-reduces' durations, each counted
                             // once (the group's ranks spend it together)
  double comm_fraction = 0;  // comm_time / step_time (0 when step_time is 0)
};
// traces[r]: TP rank r's events in seq order (world ranks 0 .. k-1, k = traces.size() >= 1), only
// module events and synchronous all-reduces over all k ranks (the harness records nothing else);
// the ranks' work may differ.
// Throws gtl::Error naming k and ranks_per_node for IntraNode with k > model.ranks_per_node.
TpStepFigures tp_step_figures(const std::vector<std::vector<gtl::dist::TraceEvent>>& traces,
                              const gtl::dist::CostModel& model, TpPlacement placement);
// The largest TP size k among the keys of `traces_by_size` (the traces of the same block at TP
// size k) whose step keeps comm_fraction <= max_fraction under `placement`; sizes the placement
// refuses are not candidates. 0 when no size qualifies.
int largest_tp_size(
    const std::map<int, std::vector<std::vector<gtl::dist::TraceEvent>>>& traces_by_size,
    const gtl::dist::CostModel& model, TpPlacement placement, double max_fraction);

}  // namespace lab08
