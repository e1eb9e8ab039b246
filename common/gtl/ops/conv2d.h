// 2-D convolution (cross-correlation, as in every deep-learning framework), NCHW layout.
//
// clang-format off
//   x  [N, C, H, W]     input
//   w  [K, C, R, S]     K filters of C channels, R x S taps
//   b  [K]              bias (optional: pass an undefined Tensor())
//   y  [N, K, P, Q]     P = (H + 2 pad_h - R) / stride_h + 1, Q likewise
//   y[n, k, p, q] = b[k] + sum_{c, r, s} w[k, c, r, s] * x[n, c, p*stride_h - pad_h + r,
//                                                             q*stride_w - pad_w + s]
// (taps that fall into the zero padding contribute nothing).
//
// Backward, for a loss L with dy = dL/dy:
//   conv2d_backward_data    dx = dL/dx  (the "transposed convolution" of dy with w)
//   conv2d_backward_weight  dw = dL/dw  (correlation of x with dy, summed over the batch)
//   conv2d_backward_bias    db = dL/db  (dy summed over N, P, Q)
//
// Backends:
//   CPU   im2col + GEMM: each image's receptive fields are unrolled into the columns of a
//         [C*R*S, P*Q] matrix, so the convolution becomes one OpenBLAS sgemm per image, the
//         classic way to reuse a fast GEMM. float16/bfloat16 go through float32 and are rounded
//         once at the end, as in matmul.
//   CUDA  cuDNN (conv2d.cu), algorithm chosen by heuristic or, with cudnn benchmark mode on
//         (math_mode.h), by measurement; float32 uses TF32 only when tf32_enabled().
//         Without cuDNN in the build, the CUDA path throws an error saying so.
// clang-format on
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

struct Conv2dParams {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  // The same stride and padding in both directions.
  static Conv2dParams make(int64_t stride, int64_t padding) {
    return {stride, stride, padding, padding};
  }
};

// [N, K, P, Q] for input shape x and weight shape w; throws naming both shapes when they do not
// fit (channel mismatch, kernel larger than the padded input, non-positive stride, ...).
Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p);

// y = conv(x, w) + b. `bias` may be undefined (no bias).
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p);

// dL/dx, shape x_shape, from dy [N, K, P, Q] and the weights.
Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape,
                            const Conv2dParams& p);

// dL/dw, shape w_shape, from dy and the forward input x.
Tensor conv2d_backward_weight(const Tensor& dy, const Tensor& x, const Shape& w_shape,
                              const Conv2dParams& p);

// dL/db, shape [K]: dy summed over batch and space.
Tensor conv2d_backward_bias(const Tensor& dy);

}  // namespace gtl::ops
