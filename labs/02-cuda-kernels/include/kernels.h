// Lab 02, CUDA kernels: the kernels you write, each next to a working naive baseline.
//
// This header is part of the pristine lab (labs/02-cuda-kernels/include): do not edit it. Your
// files are in starter/02-cuda-kernels/, one per kernel family; the map from TODO to file, test
// and benchmark is in the handout, labs/02-cuda-kernels/README.md.
//
// Every function takes device pointers, launches its kernels on `stream` and returns without
// waiting. Matrices are row-major float32. The functions exist only in CUDA builds.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>  // cudaStream_t (the CPU emulator brings its own)

namespace lab02 {

// ---- 1. Sum reduction (reduce.cu): *out = x[0] + ... + x[n-1]; *out is overwritten -----------
void reduce_sum_naive(const float* x, float* out, int64_t n, cudaStream_t stream);   // provided
void reduce_sum_shared(const float* x, float* out, int64_t n, cudaStream_t stream);  // TODO 1a
void reduce_sum_warp(const float* x, float* out, int64_t n, cudaStream_t stream);    // TODO 1b
void reduce_sum(const float* x, float* out, int64_t n, cudaStream_t stream);         // TODO 1c

// ---- 2. Transpose (transpose.cu): out[c * rows + r] = in[r * cols + c] -------------------------
void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream);
void transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream);  // TODO 2

// ---- 3. SGEMM (sgemm.cu): C[M x N] = A[M x K] * B[K x N] ---------------------------------------
void sgemm_naive(const float* a, const float* b, float* c, int m, int n, int k,
                 cudaStream_t stream);
void sgemm_tiled(const float* a, const float* b, float* c, int m, int n, int k,
                 cudaStream_t stream);  // TODO 3a
void sgemm_register_tiled(const float* a, const float* b, float* c, int m, int n, int k,
                          cudaStream_t stream);  // TODO 3b

// ---- 4. Row softmax (softmax.cu): each row of x[rows x cols] -> softmax -------------------------
void softmax_naive(const float* x, float* y, int rows, int cols, cudaStream_t stream);
void softmax(const float* x, float* y, int rows, int cols, cudaStream_t stream);  // TODO 4

// ---- 5. LayerNorm forward (layernorm.cu): y = (x - mean) * rstd * weight + bias per row -------
// mean and rstd [rows] are saved for the backward pass, as in a training framework.
void layernorm_naive(const float* x, const float* weight, const float* bias, float* y, float* mean,
                     float* rstd, int rows, int cols, float eps, cudaStream_t stream);
void layernorm(const float* x, const float* weight, const float* bias, float* y, float* mean,
               float* rstd, int rows, int cols, float eps, cudaStream_t stream);  // TODO 5

// ---- 5b. LayerNorm backward (layernorm.cu) ------------------------------------------------------
// From dy, x, weight and the mean and rstd the forward saved: dx [rows x cols], and
// dweight, dbias [cols], the sums over rows of dy * xhat and of dy (overwritten, not accumulated).
void layernorm_backward(const float* dy, const float* x, const float* weight, const float* mean,
                        const float* rstd, float* dx, float* dweight, float* dbias, int rows,
                        int cols, cudaStream_t stream);  // TODO 5b

// ---- 6. Bias + GELU epilogue (bias_gelu.cu): y = gelu(x + bias[col]), tanh approximation --------
void bias_gelu_unfused(const float* x, const float* bias, float* tmp, float* y, int rows, int cols,
                       cudaStream_t stream);  // provided: a bias kernel, then a GELU kernel
void bias_gelu_fused(const float* x, const float* bias, float* y, int rows, int cols,
                     cudaStream_t stream);  // TODO 6

}  // namespace lab02
