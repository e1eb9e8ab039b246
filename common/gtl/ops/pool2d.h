// 2-D max and average pooling, NCHW, no padding: each output is the max (or the mean) of a
// kernel_h x kernel_w window of its input plane; windows start every stride_h rows and stride_w
// columns. x [N, C, H, W] -> y [N, C, P, Q] with P = (H - kernel_h) / stride_h + 1, Q likewise.
//
// Max pooling's gradient flows only to the element that won each window, so the forward pass
// returns the winners' positions (`indices`, int64, the flat index ih * W + iw inside the input
// plane, as PyTorch's return_indices) and the backward pass routes dy through them. Ties go to
// the first element of the window in row-major order; a NaN in a window wins (NaN propagates).
// Average pooling's gradient spreads dy / (kernel_h * kernel_w) over the window.
// Overlapping windows (stride < kernel) add their contributions.
//
// Backends: plain loops on the CPU, one-thread-per-element kernels on the GPU (pool2d.cu). The
// GPU backward gathers (each input element sums the outputs that used it) rather than scatters
// with atomics, so it is deterministic and adds in the same order as the CPU loop.
// float16/bfloat16 are computed in float32 and rounded once per output.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

struct Pool2dParams {
  int64_t kernel_h = 2, kernel_w = 2;
  int64_t stride_h = 2, stride_w = 2;
  // A square kernel with the same stride in both directions.
  static Pool2dParams make(int64_t kernel, int64_t stride) {
    return {kernel, kernel, stride, stride};
  }
};

// [N, C, P, Q] for input shape x; throws when the window does not fit or a size is not positive.
Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p);

struct MaxPool2dResult {
  Tensor output;   // [N, C, P, Q], x's dtype
  Tensor indices;  // [N, C, P, Q], int64: ih * W + iw of each window's maximum
};

MaxPool2dResult max_pool2d_forward(const Tensor& x, const Pool2dParams& p);
// dL/dx of shape x_shape from dy [N, C, P, Q] and the forward pass's indices.
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& indices, const Shape& x_shape,
                           const Pool2dParams& p);

Tensor avg_pool2d_forward(const Tensor& x, const Pool2dParams& p);
Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dParams& p);

}  // namespace gtl::ops
