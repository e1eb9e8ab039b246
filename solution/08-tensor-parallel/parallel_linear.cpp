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

// SOLUTION(lab08) step 1: both layers: their shards, forward and backward, with f and g inside.
ColumnParallelLinear::ColumnParallelLinear(const nn::Linear& full, Communicator& tp)
    : Module("column_parallel_linear"), tp_(tp), in_(full.in_features()), out_local_(0) {
  const Slice rows = tp_slice(full.out_features(), tp.rank(), tp.world_size(), "output features");
  out_local_ = rows.size();
  const std::vector<nn::ParamRef> p = full.parameters();
  GTL_CHECK(p.size() == 2, "ColumnParallelLinear: the full layer must have a bias");
  add_parameter("weight", p[0].value.slice(rows.begin, rows.end).clone());
  add_parameter("bias", p[1].value.slice(rows.begin, rows.end).clone());
}

Tensor ColumnParallelLinear::forward_impl(const Tensor& x, nn::Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_, "ColumnParallelLinear '"
                                                  << path() << "': expected [N, " << in_
                                                  << "], got " << gtl::shape_str(x.shape()));
  Tensor y = gtl::ops::matmul(x, params_[0].value, false, true);  // f: x as it is
  gtl::ops::bias_add_(y, params_[1].value);
  ctx.saved = {x};
  return y;
}

Tensor ColumnParallelLinear::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  const Tensor& x = ctx.saved.at(0);
  const nn::ParamRef& w = params_[0];
  Tensor dx = gtl::ops::matmul(dy, w.value);  // this rank's share of dx
  gtl::ops::matmul_out(dy, x, w.grad, true, false, 1.f,
                       mode == nn::GradMode::Accumulate ? 1.f : 0.f);
  write_grad(params_[1], gtl::ops::sum_rows(dy), mode);
  tp_.all_reduce(dx);  // f's backward
  return dx;
}

RowParallelLinear::RowParallelLinear(const nn::Linear& full, Communicator& tp)
    : Module("row_parallel_linear"), tp_(tp), in_local_(0), out_(full.out_features()) {
  const Slice cols = tp_slice(full.in_features(), tp.rank(), tp.world_size(), "input features");
  in_local_ = cols.size();
  const std::vector<nn::ParamRef> p = full.parameters();
  GTL_CHECK(p.size() == 2, "RowParallelLinear: the full layer must have a bias");
  add_parameter("weight", copy_columns(p[0].value, cols));
  add_parameter("bias", p[1].value.clone());
}

Tensor RowParallelLinear::forward_impl(const Tensor& x, nn::Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_local_, "RowParallelLinear '"
                                                        << path() << "': expected [N, " << in_local_
                                                        << "] (this rank's columns"
                                                        << "), got " << gtl::shape_str(x.shape()));
  Tensor y = gtl::ops::matmul(x, params_[0].value, false, true);  // a partial sum of y
  tp_.all_reduce(y);                                              // g's forward
  gtl::ops::bias_add_(y, params_[1].value);                       // once, after the sum
  ctx.saved = {x};
  return y;
}

Tensor RowParallelLinear::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  const Tensor& x = ctx.saved.at(0);  // g's backward: dy as it is
  const nn::ParamRef& w = params_[0];
  Tensor dx = gtl::ops::matmul(dy, w.value);
  gtl::ops::matmul_out(dy, x, w.grad, true, false, 1.f,
                       mode == nn::GradMode::Accumulate ? 1.f : 0.f);
  write_grad(params_[1], gtl::ops::sum_rows(dy), mode);
  return dx;
}
// END SOLUTION(lab08)

}  // namespace lab08
