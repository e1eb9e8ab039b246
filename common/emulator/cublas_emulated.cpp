// cuBLAS on the CPU: see cublas_emulated.h for what is emulated and what is not.
#include "cublas_emulated.h"

#include <algorithm>
#include <cstdint>

#include "library_handles_emulated.h"

struct cublasContext {
  cudaStream_t stream = nullptr;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
};

namespace {

// cuBLAS's statuses for a missing handle and a missing pointer.
constexpr emu::HandleStatuses<cublasStatus_t> kStatuses = {
    CUBLAS_STATUS_SUCCESS, CUBLAS_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_INVALID_VALUE};

bool is_operation(cublasOperation_t op) {
  return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C;
}

// A, B and C of one type, computed in float32 (cuBLAS's table for cublasGemmEx lists more).
bool supported(cudaDataType_t a, cudaDataType_t b, cudaDataType_t c, cublasComputeType_t compute) {
  const bool float32_compute = compute == CUBLAS_COMPUTE_32F ||
                               compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
                               compute == CUBLAS_COMPUTE_32F_FAST_TF32;
  const bool one_type = a == b && b == c;
  const bool known = a == CUDA_R_32F || a == CUDA_R_16F || a == CUDA_R_16BF;
  // TF32 is a float32 compute mode: it applies to float32 data only.
  const bool tf32_ok = compute != CUBLAS_COMPUTE_32F_FAST_TF32 || a == CUDA_R_32F;
  return float32_compute && one_type && known && tf32_ok;
}

// Element (row, col) of op(X), X column-major with leading dimension ld.
int64_t at(cublasOperation_t op, int64_t row, int64_t col, int ld) {
  return op == CUBLAS_OP_N ? row + col * int64_t{ld} : col + row * int64_t{ld};
}

}  // namespace

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  return emu::create_object(handle, kStatuses);
}

cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream) {
  return emu::write_setting(handle, &cublasContext::stream, stream, kStatuses);
}

cublasStatus_t cublasGetStream(cublasHandle_t handle, cudaStream_t* stream) {
  return emu::read_setting(handle, &cublasContext::stream, stream, kStatuses);
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  const int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  if (base < CUBLAS_DEFAULT_MATH || base > CUBLAS_TF32_TENSOR_OP_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  return emu::read_setting(handle, &cublasContext::math, mode, kStatuses);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k, const void* alpha,
                            const void* A, cudaDataType_t Atype, int lda, const void* B,
                            cudaDataType_t Btype, int ldb, const void* beta, void* C,
                            cudaDataType_t Ctype, int ldc, cublasComputeType_t computeType,
                            cublasGemmAlgo_t) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m < 0 || n < 0 || k < 0 || !is_operation(transa) || !is_operation(transb))
    return CUBLAS_STATUS_INVALID_VALUE;
  // The stored rows of A are m for op N, else k; of B, k for op N, else n.
  const int a_rows = transa == CUBLAS_OP_N ? m : k, b_rows = transb == CUBLAS_OP_N ? k : n;
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (!supported(Atype, Btype, Ctype, computeType)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;

  // alpha and beta are host scalars: read now, as cuBLAS reads them when the call is made (a
  // captured graph keeps these values).
  const float a_scale = *static_cast<const float*>(alpha);
  const float c_scale = *static_cast<const float*>(beta);
  const bool tf32 = computeType == CUBLAS_COMPUTE_32F_FAST_TF32;
  const auto gemm = [=] {
    const emu::OutputsWritable writable;  // the library's kernels write C
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < m; ++i) {
        float sum = 0.f;
        for (int64_t l = 0; l < k; ++l) {
          float x = emu::load_as_float(A, Atype, at(transa, i, l, lda));
          float y = emu::load_as_float(B, Btype, at(transb, l, j, ldb));
          if (tf32) {
            x = emu::to_tf32(x);
            y = emu::to_tf32(y);
          }
          sum += x * y;
        }
        const int64_t c = i + j * int64_t{ldc};
        const float old = c_scale == 0.f ? 0.f : c_scale * emu::load_as_float(C, Ctype, c);
        emu::store_float(C, Ctype, c, a_scale * sum + old);
      }
  };
  return emu::enqueue(handle->stream, gemm) == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                                                           : CUBLAS_STATUS_EXECUTION_FAILED;
}

// The strided-batched form is, by its definition in the cuBLAS documentation, cublasGemmEx on
// batchCount matrix triples at A + i * strideA, B + i * strideB, C + i * strideC (strides in
// elements). A negative batchCount is CUBLAS_STATUS_INVALID_VALUE; 0 does nothing.
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                          cublasOperation_t transb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType_t Atype,
                                          int lda, long long int strideA, const void* B,
                                          cudaDataType_t Btype, int ldb, long long int strideB,
                                          const void* beta, void* C, cudaDataType_t Ctype, int ldc,
                                          long long int strideC, int batchCount,
                                          cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (batchCount < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (!supported(Atype, Btype, Ctype, computeType)) return CUBLAS_STATUS_NOT_SUPPORTED;
  // Supported types are 32F (4 bytes) or 16F/16BF (2 bytes).
  auto at_matrix = [](const void* base, cudaDataType_t type, long long stride, int i) {
    const long long bytes = type == CUDA_R_32F ? 4 : 2;
    return static_cast<const char*>(base) + stride * i * bytes;
  };
  for (int i = 0; i < batchCount; ++i) {
    const cublasStatus_t status = cublasGemmEx(
        handle, transa, transb, m, n, k, alpha, at_matrix(A, Atype, strideA, i), Atype, lda,
        at_matrix(B, Btype, strideB, i), Btype, ldb, beta,
        const_cast<char*>(at_matrix(C, Ctype, strideC, i)), Ctype, ldc, computeType, algo);
    if (status != CUBLAS_STATUS_SUCCESS) return status;
  }
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an unsupported value or parameter was passed to the function";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    default:
      return "an error (cuBLAS emulated on the CPU)";
  }
}
