// Element-wise arithmetic: add, mul, scale, axpy and bias_add.
//
// The simplest ops of a training step, and the ones that are purely memory bound: each element
// is read and written once, so the only thing that matters for speed is streaming memory
// (contiguous loops on the CPU, a grid-stride loop on the GPU). float16 and bfloat16 inputs are
// computed in float32 and rounded once to the input dtype, as autocast does.
//
// Names ending in `_` write into their first tensor argument (like PyTorch's add_): a Tensor is
// a handle, so `const Tensor&` still lets the op write the data it points to.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

// out = a + b. Same shape, dtype and device.
Tensor add(const Tensor& a, const Tensor& b);
// a += b.
void add_(const Tensor& a, const Tensor& b);

// out = a * b (element by element). Same shape, dtype and device.
Tensor mul(const Tensor& a, const Tensor& b);
// a *= b.
void mul_(const Tensor& a, const Tensor& b);

// out = alpha * x.
Tensor scale(const Tensor& x, float alpha);
// x *= alpha.
void scale_(const Tensor& x, float alpha);

// y += alpha * x (BLAS axpy): gradient accumulation and the SGD update. Same shape and dtype.
void axpy_(float alpha, const Tensor& x, const Tensor& y);

// out[r, c] = x[r, c] + bias[c] for x [..., C] and bias [C]. bias is float32, float16 or
// bfloat16 (whatever x's dtype; the sum is taken in float32); the output has x's dtype.
Tensor bias_add(const Tensor& x, const Tensor& bias);
// x[r, c] += bias[c].
void bias_add_(const Tensor& x, const Tensor& bias);

}  // namespace gtl::ops
