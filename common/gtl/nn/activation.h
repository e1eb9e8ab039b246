// Activation layers: ReLU and GELU (tanh approximation, as GPT-2 and llm.c).
//
// Both save their INPUT x, the one tensor their derivative needs (relu'(x) = [x > 0], gelu'(x)
// is a function of x). They compute in the dtype they are given: float32 in the residual stream,
// fp16/bf16 after a half-precision Linear (the ops do the math in float32 and round once).
#pragma once

#include "gtl/nn/module.h"

namespace gtl::nn {

class ReLU final : public Module {
 public:
  ReLU() : Module("relu") {}
  // 1 flop (a compare) per element; reads x, writes y, in the compute dtype (after a GEMM).
  ComputeCost forward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;
};

class GELU final : public Module {
 public:
  GELU() : Module("gelu") {}
  // 9 flops per element, counting tanh as one (x^3, two scalings, two adds, tanh, two
  // multiplies); reads x, writes y, in the compute dtype (GELU follows fc1's GEMM).
  ComputeCost forward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;
};

}  // namespace gtl::nn
