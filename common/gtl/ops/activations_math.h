// The scalar formulas of activations.h, shared by the CPU loop and the CUDA kernel so both paths
// compute exactly the same expression (internal).
#pragma once

#include <cmath>

#include "gtl/tensor/half.h"  // GTL_HOST_DEVICE

namespace gtl::ops::detail {

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCubic = 0.044715f;

// Written so that NaN passes through (NaN < 0 is false): a ReLU must not hide a diverged input.
GTL_HOST_DEVICE inline float relu_fwd(float x) {
  return x < 0.f ? 0.f : x;
}
GTL_HOST_DEVICE inline float relu_bwd(float x, float dout) {
  return x > 0.f ? dout : 0.f;
}

// 0.5 (1 + tanh u) is written as the identical sigmoid(2u) = 1 / (1 + exp(-2u)): for u << 0,
// tanh u rounds to -1 in float and 1 + tanh u cancels to 0 (or one ulp of 1), losing every digit
// of the small but nonzero GELU of a negative input; the sigmoid form keeps them.
GTL_HOST_DEVICE inline float gelu_sigmoid(float x) {
  const float u = kGeluScale * (x + kGeluCubic * x * x * x);
  return 1.f / (1.f + expf(-2.f * u));
}

GTL_HOST_DEVICE inline float gelu_fwd(float x) {
  return x * gelu_sigmoid(x);
}

// d/dx [x s(2u)] = s + x * 2 s (1 - s) du/dx with s = sigmoid(2u) (as 1 - tanh^2 u = 4 s (1 - s)),
// du/dx = k (1 + 3 * 0.044715 x^2).
GTL_HOST_DEVICE inline float gelu_bwd(float x, float dout) {
  const float s = gelu_sigmoid(x);
  const float du = kGeluScale * (1.f + 3.f * kGeluCubic * x * x);
  return dout * (s + 2.f * x * s * (1.f - s) * du);
}

}  // namespace gtl::ops::detail
