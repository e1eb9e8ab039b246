// Argument checks shared by the ops of this folder (internal: include only from ops/*.cpp).
//
// Every public op checks its arguments "at the door" (tiny-cuda-nn style) before it touches any
// data, so a student sees "softmax_backward: shapes differ: y is [2, 3], dy is [3, 2]" instead of
// an out-of-bounds read. The row-wise ops (softmax, layernorm, cross-entropy, bias_add) see a
// tensor [..., C] as a matrix of `rows` x C: the last dimension is the row.
#pragma once

#include <cstdint>
#include <string>

#include "gtl/runtime/device.h"
#include "gtl/runtime/error.h"
#include "gtl/tensor/tensor.h"

namespace gtl::ops::detail {

inline void check_floating(const char* op, const char* name, const Tensor& t) {
  GTL_CHECK(t.defined(), op << ": " << name << " is an undefined tensor");
  GTL_CHECK(is_floating(t.dtype()), op << ": " << name
                                       << " must be float32, float16 or bfloat16, got "
                                       << dtype_name(t.dtype()));
}

// Same shape and dtype; the message names both tensors and both values.
inline void check_same_shape_dtype(const char* op, const char* name_a, const Tensor& a,
                                   const char* name_b, const Tensor& b) {
  GTL_CHECK(a.shape() == b.shape(), op << ": shapes differ: " << name_a << " is "
                                       << shape_str(a.shape()) << ", " << name_b << " is "
                                       << shape_str(b.shape()));
  GTL_CHECK(a.dtype() == b.dtype(), op << ": dtypes differ: " << name_a << " is "
                                       << dtype_name(a.dtype()) << ", " << name_b << " is "
                                       << dtype_name(b.dtype()));
}

// A tensor [..., C] as a matrix: rows = product of the leading dimensions, cols = C.
struct RowsCols {
  int64_t rows = 0;
  int64_t cols = 0;
};

inline RowsCols rows_cols(const char* op, const char* name, const Tensor& t) {
  GTL_CHECK(t.dim() >= 1, op << ": " << name
                             << " needs at least one dimension (the row), got shape "
                             << shape_str(t.shape()));
  RowsCols rc;
  rc.cols = t.size(-1);
  rc.rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) rc.rows *= t.size(d);
  return rc;
}

// A per-row parameter (bias, LayerNorm weight): shape [C] and dtype float32 or x's dtype (a
// float32 master parameter applied to float16/bfloat16 activations, as under autocast).
inline void check_row_param(const char* op, const char* name, const Tensor& p, const Tensor& x,
                            int64_t cols) {
  GTL_CHECK(p.dim() == 1 && p.size(0) == cols,
            op << ": " << name << " must have shape [" << cols << "] (the last dimension of x "
               << shape_str(x.shape()) << "), got " << shape_str(p.shape()));
  GTL_CHECK(is_floating(p.dtype()), op << ": " << name
                                       << " must be float32, float16 or bfloat16, got "
                                       << dtype_name(p.dtype()));
}

// A CUDA tensor reached an op in a build without the CUDA backend (or on a machine without a
// usable GPU): the message names the op, the device when given, and why CUDA is unavailable.
[[noreturn]] inline void no_cuda(const char* op) {
  throw Error(std::string(op) + ": got a CUDA tensor but " + cuda_unavailable_reason());
}

[[noreturn]] inline void no_cuda(const char* op, const Tensor& t) {
  throw Error(std::string(op) + " on " + t.device().str() + ": " + cuda_unavailable_reason());
}

}  // namespace gtl::ops::detail
