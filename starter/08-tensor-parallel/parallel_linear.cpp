// Lab 08, TODO 1: the column- and row-parallel linear layers, with Megatron's conjugate operators
// f and g inside them (tensor_parallel.h).
//
// A linear layer y = x W^T + b can be cut two ways. By output features, every rank needs all of x
// and produces some columns of y. By input features, every rank needs some columns of x and
// produces a PARTIAL SUM of all of y. A column-parallel layer feeding a row-parallel one (the MLP,
// attention) therefore needs no communication in between, one all-reduce after the pair in
// forward, and one in front of the pair in backward. Where exactly each goes, and what must not
// be communicated at all, is this TODO.
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

ColumnParallelLinear::ColumnParallelLinear(const nn::Linear& full, Communicator& tp)
    : Module("column_parallel_linear"), tp_(tp), in_(full.in_features()), out_local_(0) {
  const Slice rows = tp_slice(full.out_features(), tp.rank(), tp.world_size(), "output features");
  out_local_ = rows.size();
  const std::vector<nn::ParamRef> p = full.parameters();
  GTL_CHECK(p.size() == 2, "ColumnParallelLinear: the full layer must have a bias");
  // TODO(lab08) step 1a: this rank's parameters.
  //   Spec: register "weight" [out/k, in] and then "bias" [out/k] (add_parameter), copies of the
  //   full layer's rows `rows` (p[0].value is the weight [out, in], p[1].value the bias). They
  //   must be copies: the shard is this rank's own tensor, not a view into the full layer.
  //   About 2 lines.
  (void)p;
  throw gtl::Error("TODO(lab08) step 1a: ColumnParallelLinear's shard is not implemented");
  // END TODO(lab08)
}

Tensor ColumnParallelLinear::forward_impl(const Tensor& x, nn::Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_, "ColumnParallelLinear '"
                                                  << path() << "': expected [N, " << in_
                                                  << "], got " << gtl::shape_str(x.shape()));
  // TODO(lab08) step 1a: forward of f, then this rank's columns of y.
  //   Spec: y_r = x W_r^T + b_r, [N, out/k] float32; save what backward reads. Compute it with
  //   the ops the core's nn::Linear uses in float32 (common/gtl/nn/linear.cpp): the tests compare
  //   bits with the unsharded layer's columns. About 4 lines.
  (void)ctx;
  throw gtl::Error("TODO(lab08) step 1a: ColumnParallelLinear::forward is not implemented");
  // END TODO(lab08)
}

Tensor ColumnParallelLinear::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  // TODO(lab08) step 1a: this rank's weight and bias gradients, then dx through f's backward.
  //   Spec: dy is [N, out/k] (this rank's columns of the full dy). Write this rank's weight and
  //   bias gradients, honouring `mode` (Overwrite or Accumulate) the way nn::Linear does, and
  //   return the FULL dx [N, in] on every rank. Which of these need the other ranks, and which
  //   must not? About 8 lines.
  (void)ctx, (void)dy, (void)mode;
  throw gtl::Error("TODO(lab08) step 1a: ColumnParallelLinear::backward is not implemented");
  // END TODO(lab08)
}

RowParallelLinear::RowParallelLinear(const nn::Linear& full, Communicator& tp)
    : Module("row_parallel_linear"), tp_(tp), in_local_(0), out_(full.out_features()) {
  const Slice cols = tp_slice(full.in_features(), tp.rank(), tp.world_size(), "input features");
  in_local_ = cols.size();
  const std::vector<nn::ParamRef> p = full.parameters();
  GTL_CHECK(p.size() == 2, "RowParallelLinear: the full layer must have a bias");
  // TODO(lab08) step 1b: this rank's parameters.
  //   Spec: register "weight" [out, in/k], this rank's columns `cols` of the full weight
  //   (copy_columns above), then "bias" [out]. About 2 lines.
  (void)p, (void)cols;
  throw gtl::Error("TODO(lab08) step 1b: RowParallelLinear's shard is not implemented");
  // END TODO(lab08)
}

Tensor RowParallelLinear::forward_impl(const Tensor& x, nn::Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_local_, "RowParallelLinear '"
                                                        << path() << "': expected [N, " << in_local_
                                                        << "] (this rank's columns"
                                                        << "), got " << gtl::shape_str(x.shape()));
  // TODO(lab08) step 1b: this rank's partial y, g's forward, the bias.
  //   Spec: return the unsharded layer's FULL y [N, out] on every rank, the same bits on every
  //   rank; save what backward reads.
  //   About 5 lines.
  (void)x, (void)ctx;
  throw gtl::Error("TODO(lab08) step 1b: RowParallelLinear::forward is not implemented");
  // END TODO(lab08)
}

Tensor RowParallelLinear::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  // TODO(lab08) step 1b: g's backward, then this rank's gradients.
  //   Spec: dy is the full [N, out], the same on every rank. Write this rank's weight gradient
  //   and the (whole) bias gradient, honouring `mode`; return dx_r [N, in/k], this rank's
  //   columns of dx. About 7 lines.
  (void)ctx, (void)dy, (void)mode;
  throw gtl::Error("TODO(lab08) step 1b: RowParallelLinear::backward is not implemented");
  // END TODO(lab08)
}

}  // namespace lab08
