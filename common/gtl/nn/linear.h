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

// The pass of a Linear on given parameters, shared with its tensor-parallel shard
// (parallel_linear.h) so that both compute, save and cost the same.
namespace linear {
// x [N, in] -> x W^T [N, out] in the compute dtype, no bias; saves x in the compute dtype.
Tensor forward(const Tensor& x, const ParamRef& weight, Context& ctx);
// dy [N, out] -> dx = dy W [N, in] in the compute dtype (the caller casts it back); W's gradient
// (and the bias's, when given) written with `mode`: in place by one GEMM when the dtypes agree,
// else through `write` (the caller's Module::write_grad, which widens it).
using WriteGrad = void (*)(const ParamRef&, const Tensor&, GradMode);
Tensor backward(Context& ctx, const Tensor& dy, const ParamRef& weight, const ParamRef* bias,
                GradMode mode, WriteGrad write);
// Linear's costs (above) on `rows` rows of in -> out features.
ComputeCost forward_cost(int64_t rows, int64_t in, int64_t out, bool bias);
ComputeCost backward_cost(int64_t rows, int64_t in, int64_t out, bool bias);
}  // namespace linear

}  // namespace gtl::nn
