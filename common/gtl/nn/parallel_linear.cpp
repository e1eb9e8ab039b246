// A Linear's tensor-parallel shard (see parallel_linear.h): Linear's pass (linear.h) plus one
// all-reduce.
#include "gtl/nn/parallel_linear.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include "gtl/nn/linear.h"
#include "gtl/nn/precision.h"
#include "gtl/ops/elementwise.h"

namespace gtl::nn {

ParallelLinear::ParallelLinear(Split split, Tensor weight, Tensor bias, dist::Communicator& tp)
    : Module(split == Split::Column ? "column_parallel_linear" : "row_parallel_linear"),
      split_(split),
      tp_(tp),
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

ComputeCost ParallelLinear::forward_cost(const Shape& input_shape) const {
  return linear::forward_cost(shape_numel(input_shape) / in_, in_, out_, has_bias_);
}

ComputeCost ParallelLinear::backward_cost(const Shape& input_shape) const {
  return linear::backward_cost(shape_numel(input_shape) / in_, in_, out_, has_bias_);
}

Tensor ParallelLinear::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() == 2 && x.size(1) == in_,
            "ParallelLinear '" << path() << "': expected input [N, " << in_ << "]"
                               << (split_ == Split::Row ? " (this rank's columns)" : "") << ", got "
                               << shape_str(x.shape()));
  Tensor y = linear::forward(x, params_[0], ctx);
  if (split_ == Split::Row) tp_.all_reduce(y);  // g: the partial sums, then the bias once
  if (has_bias_) ops::bias_add_(y, params_[1].value);
  return y;
}

Tensor ParallelLinear::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const ParamRef* bias = has_bias_ ? &params_[1] : nullptr;
  Tensor dx = linear::backward(ctx, dy, params_[0], bias, mode, &Module::write_grad);
  if (split_ == Split::Column) tp_.all_reduce(dx);  // f's backward: every rank's share of dx
  return cast_to(dx, ctx.input_dtype);
}

}  // namespace gtl::nn
