// Conv2d: 2-D convolution, NCHW, with bias (ops/conv2d.h: im2col + GEMM on the CPU, cuDNN on
// the GPU).
//
// Saves only its input x (in the compute dtype): dW correlates x with dy, dx needs only W and dy,
// db only dy. Like Linear it computes in the precision policy's dtype (a convolution is a GEMM in
// disguise, so tensor cores pay off) and returns dx in the input's dtype.
#pragma once

#include "gtl/nn/module.h"
#include "gtl/ops/conv2d.h"

namespace gtl::nn {

class Conv2d final : public Module {
 public:
  // Weights and bias uniform in +-1/sqrt(in_channels * kernel^2), drawn from `gen`.
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, Generator& gen,
         int64_t stride = 1, int64_t padding = 0);

  // Counted as the GEMM it is (im2col): flops 2 * N*K*P*Q * C*R*S for input [N, C, H, W], weight
  // [K, C, R, S], output [N, K, P, Q]; bytes x + W + y in the compute dtype + the float32 bias
  // (the im2col buffer of the CPU path is not counted: cuDNN does not materialise it). The bias
  // add is not counted. Backward keeps the default (twice: data and weight gradients).
  ComputeCost forward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  int64_t in_channels_;
  ops::Conv2dParams params_conv_;
};

}  // namespace gtl::nn
