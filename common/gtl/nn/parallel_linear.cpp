// A Linear's tensor-parallel shard (see parallel_linear.h): Linear's pass (linear.h) plus one
// all-reduce.
#include "gtl/nn/parallel_linear.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include "gtl/nn/linear.h"
#include "gtl/nn/precision.h"
#include "gtl/ops/elementwise.h"

namespace gtl::nn {

ParallelLinear::ParallelLinear(Split split, Tensor weight, Tensor bias, dist::Communicator& tp,
                               bool sequence_parallel)
    : Module(split == Split::Column ? "column_parallel_linear" : "row_parallel_linear"),
      split_(split),
      tp_(tp),
      sequence_parallel_(sequence_parallel),
      in_(weight.dim() == 2 ? weight.size(1) : 0),
      out_(weight.dim() == 2 ? weight.size(0) : 0),
      has_bias_(bias.defined()) {
  gtl::grading::reference_guard("gtl::nn::ParallelLinear::ParallelLinear");
  GTL_CHECK(weight.dim() == 2 && weight.dtype() == DType::Float32 &&
                (!has_bias_ || (bias.dim() == 1 && bias.size(0) == out_)),
            "ParallelLinear: expected a float32 weight [out, in] and a bias [out] or none, got "
                << shape_str(weight.shape()) << " and "
                << (has_bias_ ? shape_str(bias.shape()) : std::string("none")));
  add_parameter("weight", std::move(weight));
  if (has_bias_) add_parameter("bias", std::move(bias));
}

namespace {
// The GEMMs' rows: a column layer under SP is given N/k of them and gathers the rest.
int64_t rows(const Shape& input_shape, int64_t in, bool gathers, int k) {
  return shape_numel(input_shape) / in * (gathers ? k : 1);
}
}  // namespace

ComputeCost ParallelLinear::forward_cost(const Shape& input_shape) const {
  const bool gathers = sequence_parallel_ && split_ == Split::Column;
  return linear::forward_cost(rows(input_shape, in_, gathers, tp_.world_size()), in_, out_,
                              has_bias_);
}

ComputeCost ParallelLinear::backward_cost(const Shape& input_shape) const {
  const bool gathers = sequence_parallel_ && split_ == Split::Column;
  return linear::backward_cost(rows(input_shape, in_, gathers, tp_.world_size()), in_, out_,
                               has_bias_);
}

Tensor ParallelLinear::gather_rows(const Tensor& x) const {
  Tensor whole = Tensor::empty({x.size(0) * tp_.world_size(), x.size(1)}, x.dtype(), x.device());
  tp_.all_gather(x, whole);
  return whole;
}

Tensor ParallelLinear::scatter_rows(const Tensor& x) const {
  const int k = tp_.world_size();
  GTL_CHECK(x.size(0) % k == 0, "ParallelLinear '"
                                    << path() << "': sequence parallelism cuts the " << x.size(0)
                                    << " tokens in " << k
                                    << " equal parts; choose a TP size dividing them");
  Tensor mine = Tensor::empty({x.size(0) / k, x.size(1)}, x.dtype(), x.device());
  tp_.reduce_scatter(x, mine);
  return mine;
}

Tensor ParallelLinear::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_,
            "ParallelLinear '" << path() << "': expected input [N, " << in_ << "]"
                               << (split_ == Split::Row ? " (this rank's columns)" : "") << ", got "
                               << shape_str(x.shape()));
  const bool gathers = sequence_parallel_ && split_ == Split::Column;
  Tensor y = linear::forward(gathers ? gather_rows(x) : x, params_[0], ctx);
  if (split_ == Split::Row) {  // g: the partial sums, then the bias once
    if (sequence_parallel_) {
      y = scatter_rows(y);
    } else {
      tp_.all_reduce(y);
    }
  }
  if (has_bias_) ops::bias_add_(y, params_[1].value);
  return y;
}

Tensor ParallelLinear::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const ParamRef* bias = has_bias_ ? &params_[1] : nullptr;
  const bool gathers = sequence_parallel_ && split_ == Split::Row;
  Tensor dx = linear::backward(ctx, gathers ? gather_rows(dy) : dy, params_[0], bias, mode,
                               &Module::write_grad);
  if (split_ == Split::Column) {  // f's backward: every rank's share of dx
    if (sequence_parallel_) {
      dx = scatter_rows(dx);
    } else {
      tp_.all_reduce(dx);
    }
  }
  return cast_to(dx, ctx.input_dtype);
}

}  // namespace gtl::nn
