// ResidualMLP: the transformer's MLP block, y = x + fc2(gelu(fc1(ln(x)))),
// fc1: D -> 4D, fc2: 4D -> D.
//
// The block whose stack the course benchmarks (8 blocks, common/bench/nn): each holds 8 D^2
// weights and, per sample, saves LN's input x and fc1's input ln(x) (D each), GELU's input and
// fc2's input (4D each), plus LN's mean and rstd: about 10 D floats per sample and block, the
// activation memory that checkpointing (activation_checkpoint.h) trades for recomputation.
//
// The residual stream is float32 under every policy: the block adds its branch (computed in half
// precision) to x in float32 and returns float32, so rounding errors do not pile up along the
// stream from block to block; only the branch's GEMMs see half-precision inputs.
#pragma once

#include "gtl/nn/module.h"

namespace gtl::nn {

class ResidualMLP final : public Module {
 public:
  ResidualMLP(int64_t dim, Generator& gen, int64_t expansion = 4);
  // From given layers, children "ln", "fc1", "gelu" (made here), "fc2": the tensor-parallel
  // shard of a whole block (tensor_parallel.h: fc1 column-parallel, fc2 row-parallel).
  ResidualMLP(int64_t dim, std::unique_ptr<Module> ln, std::unique_ptr<Module> fc1,
              std::unique_ptr<Module> fc2);

  // Its own work only (the children report theirs): the float32 residual addition, 1 flop per
  // element, x and the branch read, y written. Backward adds dy to the branch's dx: the same.
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override {
    return forward_cost(input_shape);
  }

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  int64_t dim_;
};

}  // namespace gtl::nn
