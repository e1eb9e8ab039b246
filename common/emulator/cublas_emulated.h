// The cuBLAS entry points the core calls (gtl/ops/matmul.cu), emulated on the CPU for the
// emulated-CUDA build of the core (gtl_core_emulated, docs/architecture.md). cublas_v2.h in this
// folder includes this header, so matmul.cu compiles unchanged against it.
//
// Emulated, from the cuBLAS documentation's definitions:
//   cublasCreate / cublasDestroy / cublasSetStream / cublasGetStream / cublasSetMathMode /
//   cublasGetMathMode: a handle records its stream and math mode (CUBLAS_STATUS_NOT_INITIALIZED
//   for a null handle);
//   cublasGemmEx: C = alpha op(A) op(B) + beta C on column-major matrices with leading
//   dimensions, op = N or T (or C, the same as T for real types), for the type combinations
//   the core uses: A, B and C all 32F, all 16F or all 16BF, computed in 32F
//   (CUBLAS_COMPUTE_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_32F_PEDANTIC; alpha and
//   beta are host floats). Each product of a FAST_TF32 GEMM takes its inputs rounded to TF32
//   (10 mantissa bits, nearest even), so a GEMM run in TF32 when it should not differs from
//   float32 as on a GPU. beta = 0 never reads C (a NaN there is not propagated), as BLAS states.
//   Sums run in float32 over l = 0..k-1 in order, and round once to C's type.
//   Errors, as documented: CUBLAS_STATUS_INVALID_VALUE for m, n or k < 0, an unknown operation,
//   lda < max(1, rows of A as stored), likewise ldb and ldc < max(1, m), or null alpha/beta;
//   CUBLAS_STATUS_NOT_SUPPORTED for another type or compute-type combination.
//   cublasGemmStridedBatchedEx: cublasGemmEx on batchCount matrices at A + i strideA,
//   B + i strideB, C + i strideC (element strides), one after the other;
//   cublasGetStatusName / cublasGetStatusString.
// Not modelled: the summation order and split-K of real cuBLAS kernels (results may differ from
// a GPU in the last bits), the math mode's effect (it is recorded, not used: the compute type
// decides precision), device pointer mode (alpha and beta are always host pointers), timing,
// workspaces, and every other cuBLAS call.
#pragma once

#include "cuda_emulator.h"
#include "library_types_emulated.h"

typedef enum {
  CUBLAS_STATUS_SUCCESS = 0,
  CUBLAS_STATUS_NOT_INITIALIZED = 1,
  CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7,
  CUBLAS_STATUS_ARCH_MISMATCH = 8,
  CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13,
  CUBLAS_STATUS_INTERNAL_ERROR = 14,
  CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef enum {
  CUBLAS_DEFAULT_MATH = 0,
  CUBLAS_TENSOR_OP_MATH = 1,
  CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3,
  CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16
} cublasMath_t;

typedef enum {
  CUBLAS_COMPUTE_16F = 64,
  CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_PEDANTIC = 69,
  CUBLAS_COMPUTE_32F_FAST_16F = 74,
  CUBLAS_COMPUTE_32F_FAST_16BF = 75,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
  CUBLAS_COMPUTE_64F = 70
} cublasComputeType_t;

typedef enum { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99 } cublasGemmAlgo_t;

typedef struct cublasContext* cublasHandle_t;

cublasStatus_t cublasCreate(cublasHandle_t* handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode);
cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType_t Atype, int lda, const void* B,
                            cudaDataType_t Btype, int ldb, const void* beta, void* C,
                            cudaDataType_t Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType_t Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType_t Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType_t Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo);
const char* cublasGetStatusName(cublasStatus_t status);
const char* cublasGetStatusString(cublasStatus_t status);
