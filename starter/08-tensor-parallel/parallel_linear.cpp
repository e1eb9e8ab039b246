// Lab 08, TODO 1: the column- and row-parallel linear layers, with Megatron's conjugate operators
// f and g inside them (tensor_parallel.h).
//
// A linear layer y = x W^T + b can be cut two ways. By output features, every rank needs all of x
// and produces some columns of y. By input features, every rank needs some columns of x and
// produces a PARTIAL SUM of all of y. A column-parallel layer feeding a row-parallel one (the MLP,
// attention) needs no communication in between, and one all-reduce in each pass (the traffic
// check counts them). Where each goes, and what must not be communicated at all, is this TODO.
#include "gtl/nn/precision.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/reduce.h"
#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

namespace {
// Columns [begin, end) of a row-major [rows, cols] float32 CPU tensor, as a new tensor.
[[maybe_unused]] Tensor copy_columns(const Tensor& t, Slice cols) {
  const int64_t rows = t.size(0), n = t.size(1);
  Tensor out = Tensor::empty({rows, cols.size()});
  const float* src = t.data<float>();
  float* dst = out.data<float>();
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = cols.begin; j < cols.end; ++j) *dst++ = src[i * n + j];
  return out;
}
}  // namespace

// TODO(lab08) step 1: both layers: their shards, forward and backward, with f and g inside.
//   Spec: tensor_parallel.h, ColumnParallelLinear and RowParallelLinear. Each constructor
//   registers "weight" then "bias" (add_parameter), this rank's own copies of its slice of `full`
//   (p[0] the weight, p[1] the bias; copy_columns above copies a block of columns), never views:
//   an optimizer step on a shard must not touch the unsharded layer. Forward and backward are
//   nn::Linear's in float32 on the shard, with the ops it uses (common/gtl/nn/linear.cpp),
//   honouring `mode` as it does: the tests compare bits with the unsharded layer.
//   Yours to decide: in which pass of which layer f and g communicate, with which collective,
//   what must not be communicated, and where the row-parallel bias is added. Compare what a rank
//   holds in each pass with what the header says that pass returns. About 28 lines besides the
//   given ones.
ColumnParallelLinear::ColumnParallelLinear(const nn::Linear& full, Communicator& tp)
    : Module("column_parallel_linear"), tp_(tp), in_(full.in_features()), out_local_(0) {
  const Slice rows = tp_slice(full.out_features(), tp.rank(), tp.world_size(), "output features");
  out_local_ = rows.size();
  const std::vector<nn::ParamRef> p = full.parameters();
  GTL_CHECK(p.size() == 2, "ColumnParallelLinear: the full layer must have a bias");
  (void)p;
  throw gtl::Error("TODO(lab08) step 1: ColumnParallelLinear's shard is not implemented");
}

Tensor ColumnParallelLinear::forward_impl(const Tensor& x, nn::Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_, "ColumnParallelLinear '"
                                                  << path() << "': expected [N, " << in_
                                                  << "], got " << gtl::shape_str(x.shape()));
  (void)ctx;
  throw gtl::Error("TODO(lab08) step 1: ColumnParallelLinear::forward is not implemented");
}

Tensor ColumnParallelLinear::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  (void)ctx, (void)dy, (void)mode;
  throw gtl::Error("TODO(lab08) step 1: ColumnParallelLinear::backward is not implemented");
}

RowParallelLinear::RowParallelLinear(const nn::Linear& full, Communicator& tp)
    : Module("row_parallel_linear"), tp_(tp), in_local_(0), out_(full.out_features()) {
  const Slice cols = tp_slice(full.in_features(), tp.rank(), tp.world_size(), "input features");
  in_local_ = cols.size();
  const std::vector<nn::ParamRef> p = full.parameters();
  GTL_CHECK(p.size() == 2, "RowParallelLinear: the full layer must have a bias");
  (void)p, (void)cols;
  throw gtl::Error("TODO(lab08) step 1: RowParallelLinear's shard is not implemented");
}

Tensor RowParallelLinear::forward_impl(const Tensor& x, nn::Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_local_, "RowParallelLinear '"
                                                        << path() << "': expected [N, " << in_local_
                                                        << "] (this rank's columns"
                                                        << "), got " << gtl::shape_str(x.shape()));
  (void)x, (void)ctx;
  throw gtl::Error("TODO(lab08) step 1: RowParallelLinear::forward is not implemented");
}

Tensor RowParallelLinear::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  (void)ctx, (void)dy, (void)mode;
  throw gtl::Error("TODO(lab08) step 1: RowParallelLinear::backward is not implemented");
}
// END TODO(lab08)

}  // namespace lab08
