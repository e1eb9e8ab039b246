// Linear: y = x W^T + b, x [N, in], W [out, in], b [out].
//
// Saves only its input x (in the compute dtype, the copy the GEMMs read): backward needs x for
// dW = dy^T x and W (a parameter, not an activation) for dx = dy W; db = sum of dy's rows needs
// nothing. Under a half precision policy (precision.h) both GEMMs run in fp16/bf16 with float32
// accumulation; dx comes back in the dtype the input had, dW and db are written in float32.
#pragma once

#include "gtl/nn/module.h"

namespace gtl::nn {

class Linear final : public Module {
 public:
  // Weights and bias uniform in +-1/sqrt(in) (PyTorch's default), drawn from `gen` on the CPU.
  Linear(int64_t in_features, int64_t out_features, Generator& gen, bool bias = true);

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  const ParamRef& weight() const { return params_[0]; }

  // Counted: the GEMMs only (2 flops per multiply-add) and their operands in the compute dtype,
  // plus the float32 bias read (forward) or written (backward). Not counted: the bias add and
  // db's row sums (rows x out additions each, memory-bound and small next to the GEMMs).
  //   forward:  flops 2*rows*in*out;   bytes (x + W + y) in the compute dtype + bias
  //   backward: flops 4*rows*in*out, exactly twice the forward (dx = dy W and dW = dy^T x);
  //             bytes (dy + W + dx) + (dy + x + dW) in the compute dtype + db
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  int64_t in_, out_;
  bool has_bias_;
};

}  // namespace gtl::nn
