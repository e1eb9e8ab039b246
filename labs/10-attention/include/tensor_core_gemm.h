// Lab 10, part 2: a GEMM on the tensor cores, with CUDA's warp matrix functions (WMMA).
//
// This header is part of the pristine lab (labs/10-attention/include): do not edit it.
//
// C [m, n] = A [m, k] B [k, n]: A and B row-major in fp16 or bf16, C row-major float32, every
// product of two 16-bit inputs accumulated in float32. m, n and k are multiples of 16 (the tensor
// cores' tile); the pointers are 32-byte aligned (cudaMalloc's are 256). Each function launches
// its kernels on `stream` and returns without waiting. Needs sm_80 or newer (bf16 fragments).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace lab10 {

// Given: a warp per 16 x 16 tile of C, its fragments loaded straight from global memory.
void wmma_gemm_naive(const __half* a, const __half* b, float* c, int m, int n, int k,
                     cudaStream_t stream);
void wmma_gemm_naive(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
                     cudaStream_t stream);

// TODO 4a: the tiles of A and B staged in shared memory, each loaded from global memory once per
// block.
void wmma_gemm_tiled(const __half* a, const __half* b, float* c, int m, int n, int k,
                     cudaStream_t stream);
void wmma_gemm_tiled(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
                     cudaStream_t stream);

// TODO 4b: 4a plus one improvement of your choice from the handout's list.
void wmma_gemm_fast(const __half* a, const __half* b, float* c, int m, int n, int k,
                    cudaStream_t stream);
void wmma_gemm_fast(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
                    cudaStream_t stream);

}  // namespace lab10
