// LayerNorm over the last dimension, forward and backward.
//
// clang-format off
//   mean_r = (1/C) sum_c x_rc          var_r = (1/C) sum_c (x_rc - mean_r)^2   (biased, as PyTorch)
//   rstd_r = 1 / sqrt(var_r + eps)     xhat_rc = (x_rc - mean_r) * rstd_r
//   out_rc = xhat_rc * weight_c + bias_c
// clang-format on
//
// The variance is computed in two passes (first the mean, then the squared deviations), not as
// E[x^2] - E[x]^2: that one-pass formula subtracts two large, nearly equal numbers and loses
// every digit when |mean| >> std (activations with a large offset), even going negative.
//
// Forward returns mean and rstd per row (float32) so the backward need not recompute them:
//   dxhat = dout * weight
//   dx    = rstd * (dxhat - mean_c(dxhat) - xhat * mean_c(dxhat * xhat))
//   dweight_c = sum_r dout_rc * xhat_rc,   dbias_c = sum_r dout_rc
//
// Dtypes: x (and dout) float32, float16 or bfloat16, math in float32; weight and bias float32,
// float16 or bfloat16 (the same one for both), whatever x's: float32 masters beside half
// activations, or a half copy of the parameters beside the float32 input LayerNorm always takes
// (nn/layernorm.h) under mixed precision's sharded layout (nn/flat_parameter.h). out and dx have
// x's dtype; mean, rstd, dweight and dbias are float32 (sums over many rows, and what a float32
// master parameter's gradient needs).
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

struct LayerNormForward {
  Tensor out;   // x's shape and dtype
  Tensor mean;  // float32 [rows], rows = numel / C
  Tensor rstd;  // float32 [rows]
};

struct LayerNormBackward {
  Tensor dx;       // x's shape and dtype
  Tensor dweight;  // float32 [C]
  Tensor dbias;    // float32 [C]
};

// x [..., C], weight [C], bias [C].
LayerNormForward layernorm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                   float eps = 1e-5f);

// dout: x's shape and dtype; mean, rstd: as returned by layernorm_forward for this x.
LayerNormBackward layernorm_backward(const Tensor& dout, const Tensor& x, const Tensor& weight,
                                     const Tensor& mean, const Tensor& rstd);

}  // namespace gtl::ops
