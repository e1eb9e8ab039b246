// Matrix multiplication: C = op(A) op(B), and the accumulating form backward passes need.
//
//   Tensor c = ops::matmul(x, w, false, true);                // y = x w^T      (linear forward)
//   ops::matmul_out(x, dy, dw, true, false, 1.f, 1.f);          // dW += x^T dy   (accumulate)
//
// op(X) is X or its transpose. All tensors are 2-D, contiguous and row-major (gtl::Tensor's
// only layout); a transpose is a flag, never a copy. Shapes: op(A) is [M, K], op(B) is [K, N],
// C is [M, N]; a mismatch is an error naming both shapes.
//
// Backends:
//   CPU   OpenBLAS cblas_sgemm in float32. float16/bfloat16 inputs are converted to float32,
//         multiplied, and the result rounded once to the input dtype: the rounding a GPU with
//         float32 accumulation shows, so CPU and GPU results can be compared. The float32 copies
//         are scratch outside the allocator, so the allocator sees only C, as on a GPU.
//   CUDA  cuBLAS (cublasGemmEx) on current_stream(), float32 accumulation throughout
//         (CUBLAS_COMPUTE_32F); float16/bfloat16 run on the tensor cores; float32 uses TF32 tensor
//         cores only when ops::tf32_enabled() (math_mode.h).
//
// cuBLAS is column-major, our tensors are row-major: how the two meet is explained in matmul.cu.
//
// Batched (attention's per-head products, nn/causal_self_attention.h): a, b, c are 3-D
// [batch, rows, cols] and matrix i of c is alpha * op(a_i) op(b_i) + beta * c_i.
//   CPU   a plain triple loop per matrix, float32 sums over l = 0..K-1 in order, rounded once to
//         c's dtype. Not OpenBLAS, on purpose: an element's value then never depends on how many
//         rows are computed with it, so one query row attending to a KV cache gives bitwise what
//         the same row gives inside a full [T, T] product (nn/kv_cache.h relies on it). Attention's
//         matrices in this course are small (T, head_dim <= a few hundred).
//   CUDA  one cublasGemmStridedBatchedEx call (strides rows*cols of each operand), the same
//         compute types as matmul.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

// Returns op(a) op(b) as a new [M, N] tensor of a's dtype on a's device.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

// c = alpha * op(a) op(b) + beta * c, written into the existing [M, N] tensor c (same dtype and
// device as a and b). beta = 1 accumulates (gradients); beta = 0 overwrites and never reads c,
// so c may hold garbage (even NaN) then, as in BLAS.
void matmul_out(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a = false,
                bool transpose_b = false, float alpha = 1.f, float beta = 0.f);

// The [M, K, N] of op(a) op(b), checking dims, dtypes and devices: the checks at the door.
struct MatmulShape {
  int64_t m = 0, k = 0, n = 0;
};
MatmulShape matmul_shape(const char* op, const Tensor& a, const Tensor& b, bool transpose_a,
                         bool transpose_b);

// Returns the [batch, M, N] products op(a_i) op(b_i), in a's dtype on a's device.
Tensor batched_matmul(const Tensor& a, const Tensor& b, bool transpose_a = false,
                      bool transpose_b = false, float alpha = 1.f);
// c_i = alpha * op(a_i) op(b_i) + beta * c_i into the existing [batch, M, N] tensor c (a view is
// fine: tensors are contiguous). beta = 0 never reads c.
void batched_matmul_out(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a = false,
                        bool transpose_b = false, float alpha = 1.f, float beta = 0.f);

}  // namespace gtl::ops
