// The cuBLAS path of ops::matmul.
//
// Row-major tensors, column-major cuBLAS. cuBLAS follows Fortran BLAS: a matrix is stored column
// by column. Read as column-major, the bytes of a row-major [R, C] matrix are its transpose, a
// column-major [C, R] matrix with leading dimension C. So instead of asking cuBLAS for
//     C = op(A) op(B)            (row-major, [M, N])
// we ask it for the transpose, which it then writes column-major, i.e. exactly our row-major C:
//     C^T = op(B)^T op(A)^T       (column-major, [N, M], leading dimension N)
// Swap the operands, swap M and N, keep each operand's transpose flag: no data is ever moved.
//
// Precision. Every call accumulates in float32 (CUBLAS_COMPUTE_32F). float16/bfloat16 inputs
// use the tensor cores at that precision; float32 inputs use them only when TF32 is enabled
// (CUBLAS_COMPUTE_32F_FAST_TF32), see math_mode.h. Reduced-precision split-K reductions are
// disallowed, so the only rounding beyond float32 arithmetic is the final store to C's dtype:
// the CPU path rounds the same way.
//
// Handles. A cuBLAS handle carries per-device state and the stream it enqueues on. One handle
// per (device, stream) per thread: no two threads share a handle (cuBLAS handles are not
// thread-safe) and switching streams never races with work queued on another. The handles
// live for the whole program on purpose: destroying them at exit races with the CUDA runtime's
// own teardown (PyTorch keeps its handles alive for the same reason).
#include <cublas_v2.h>

#include <limits>
#include <map>
#include <utility>

#include "gtl/ops/detail/matmul_cuda.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/math_mode.h"
#include "gtl/runtime/cuda_check.h"

namespace gtl::ops::cuda {

namespace {

cublasHandle_t handle_for(Device device, cudaStream_t stream) {
  thread_local std::map<std::pair<int, cudaStream_t>, cublasHandle_t> handles;
  const std::pair<int, cudaStream_t> key{device.index(), stream};
  if (auto it = handles.find(key); it != handles.end()) return it->second;
  // Cached only once fully configured: a handle left on another stream, or with reduced-precision
  // reductions allowed, would be reused silently.
  cublasHandle_t handle = nullptr;
  GTL_CUBLAS_CHECK(cublasCreate(&handle));
  try {
    GTL_CUBLAS_CHECK(cublasSetStream(handle, stream));
    GTL_CUBLAS_CHECK(cublasSetMathMode(
        handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                          CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
    handles.emplace(key, handle);
  } catch (...) {
    (void)cublasDestroy(handle);
    throw;
  }
  return handle;
}

// cuBLAS takes 32-bit sizes: a larger one must fail loudly, not wrap around.
int checked_int(int64_t v, const char* what) {
  GTL_CHECK(v <= std::numeric_limits<int>::max(),
            "matmul on the GPU: " << what << " = " << v << " exceeds cuBLAS's 32-bit limit of "
                                  << std::numeric_limits<int>::max()
                                  << "; split the product into smaller matrices");
  return static_cast<int>(v);
}

cudaDataType_t cuda_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return CUDA_R_32F;
    case DType::Float16:
      return CUDA_R_16F;
    case DType::BFloat16:
      return CUDA_R_16BF;
    default:
      break;
  }
  throw Error(std::string("matmul: no cuBLAS type for ") + dtype_name(dtype));
}

// An empty sum (K = 0), as on the CPU: op(a) op(b) is zero, only beta * c is left; beta = 0
// overwrites c without reading it (BLAS). Tensor(c) is a handle on c's data.
void empty_sum(const Tensor& c, float beta) {
  if (beta == 0.f) {
    Tensor(c).zero_();
  } else {
    scale_(c, beta);
  }
}

// float32 accumulation throughout; float32 inputs on the TF32 tensor cores only when enabled.
cublasComputeType_t compute_type(DType dtype) {
  return dtype == DType::Float32 && tf32_enabled() ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                   : CUBLAS_COMPUTE_32F;
}

}  // namespace

void matmul(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b,
            float alpha, float beta, int64_t m, int64_t k, int64_t n) {
  DeviceGuard guard(c.device());
  if (k == 0) return empty_sum(c, beta);
  cublasHandle_t handle = handle_for(c.device(), current_stream().handle());

  const cudaDataType_t type = cuda_dtype(a.dtype());
  const cublasComputeType_t compute = compute_type(a.dtype());
  const int M = checked_int(m, "M"), N = checked_int(n, "N"), K = checked_int(k, "K");
  // Leading dimensions: the stored row length of each row-major matrix (a is stored [M, K], or
  // [K, M] when transposed; b likewise), so they fit in int too, and are >= 1 as K > 0 here.
  const int lda = transpose_a ? M : K, ldb = transpose_b ? K : N, ldc = N;
  // C^T = op(B)^T op(A)^T: B first, A second, N and M swapped (see the header comment).
  GTL_CUBLAS_CHECK(cublasGemmEx(handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha,
                                b.data_ptr(), type, ldb, a.data_ptr(), type, lda, &beta,
                                c.data_ptr(), type, ldc, compute, CUBLAS_GEMM_DEFAULT));
  detail::count_library_launch();
}

// The batched form, one cublasGemmStridedBatchedEx: the same operand swap per matrix, and each
// operand's stride is its matrix size (the matrices are stored back to back).
void batched_matmul(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a,
                    bool transpose_b, float alpha, float beta, int64_t batch, int64_t m, int64_t k,
                    int64_t n) {
  DeviceGuard guard(c.device());
  if (k == 0) return empty_sum(c, beta);
  cublasHandle_t handle = handle_for(c.device(), current_stream().handle());
  const cudaDataType_t type = cuda_dtype(a.dtype());
  const cublasComputeType_t compute = compute_type(a.dtype());
  const int M = checked_int(m, "M"), N = checked_int(n, "N"), K = checked_int(k, "K");
  const int count = checked_int(batch, "batch");
  const int lda = transpose_a ? M : K, ldb = transpose_b ? K : N, ldc = N;
  const long long stride_a = m * k, stride_b = k * n, stride_c = m * n;
  GTL_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
      handle, transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N, transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, N,
      M, K, &alpha, b.data_ptr(), type, ldb, stride_b, a.data_ptr(), type, lda, stride_a, &beta,
      c.data_ptr(), type, ldc, stride_c, count, compute, CUBLAS_GEMM_DEFAULT));
  detail::count_library_launch();
}

}  // namespace gtl::ops::cuda
