// Activation functions and their backward passes: ReLU and GELU.
//
//   relu(x) = max(x, 0)                        relu'(x) = 1 if x > 0 else 0
//   gelu(x) = 0.5 x (1 + tanh(k (x + 0.044715 x^3))),  k = sqrt(2/pi)
//
// GELU is the tanh approximation GPT-2 was trained with (and llm.c implements): the exact
// x * Phi(x) needs erf, the approximation agrees with it to about 1e-3 and is what the GPT-2
// weights expect. It is evaluated as x * sigmoid(2u), the same function written so that it
// keeps its digits for very negative inputs (see activations_math.h).
//
// The backward ops take the saved forward *input* x and the output gradient dout, and return
// dx = dout * f'(x): storing x (not the output) is what lets GELU's derivative be computed.
// float16 and bfloat16 are computed in float32 and rounded once; outputs have the input's dtype.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

Tensor relu(const Tensor& x);
// dx = dout where x > 0, else 0. x and dout: same shape, dtype and device.
Tensor relu_backward(const Tensor& x, const Tensor& dout);

Tensor gelu(const Tensor& x);
// dx = dout * gelu'(x). x and dout: same shape, dtype and device.
Tensor gelu_backward(const Tensor& x, const Tensor& dout);

}  // namespace gtl::ops
