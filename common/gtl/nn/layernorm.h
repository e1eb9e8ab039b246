// LayerNorm over the last dimension, with float32 weight (gamma, init 1) and bias (beta, init 0).
//
// Saves its input x and the per-row mean and rstd the forward computed (2 floats per row):
// backward needs xhat = (x - mean) * rstd, and keeping mean/rstd saves recomputing two
// reductions, for a memory cost of 2/C of x (llm.c keeps them the same way). It always computes
// in float32 (precision.h): a half input is widened first, and the output is float32.
//
// Under sequence parallelism (parallel_linear.h) each rank of a TP group normalises only its own
// N/k tokens, so its weight and bias gradients are its tokens' share: given the group, the layer
// all-reduces each before writing it (two all-reduces of `features` floats a backward; Megatron-
// LM sums these once a step instead, which accumulation over micro-batches makes harder to
// follow: here every written gradient is already the whole one).
#pragma once

#include "gtl/distributed/communicator.h"
#include "gtl/nn/module.h"

namespace gtl::nn {

class LayerNorm final : public Module {
 public:
  explicit LayerNorm(int64_t features, float eps = 1e-5f);

  // The TP group whose ranks each normalise their own tokens (nullptr: none, the default).
  void set_sequence_parallel(dist::Communicator* tp);
  dist::Communicator* sequence_parallel() const { return sequence_parallel_; }

  // 8 flops per element (mean: 1, variance: 3, normalise: 2, scale and shift: 2), all float32;
  // bytes: x read, y written, weight and bias read, mean and rstd written (one float per row each).
  ComputeCost forward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  int64_t features_;
  float eps_;
  dist::Communicator* sequence_parallel_ = nullptr;
};

}  // namespace gtl::nn
