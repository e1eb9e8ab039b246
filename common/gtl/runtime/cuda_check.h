// Checked calls into the CUDA runtime, cuBLAS, cuDNN and NCCL. Include only from code that is
// compiled with the CUDA backend (GTL_WITH_CUDA); each macro throws gtl::CudaError on failure.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "gtl/runtime/error.h"
#include "gtl/runtime/launch_count.h"

namespace gtl::detail {
[[noreturn]] inline void throw_cuda(const char* call, const char* file, int line, cudaError_t e) {
  throw CudaError("CUDA", call, file, line,
                  std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")");
}
}  // namespace gtl::detail

#define GTL_CUDA_CHECK(call)                                            \
  do {                                                                  \
    cudaError_t gtl_err_ = (call);                                      \
    if (gtl_err_ != cudaSuccess) {                                      \
      (void)cudaGetLastError(); /* clear the sticky-free error state */ \
      ::gtl::detail::throw_cuda(#call, __FILE__, __LINE__, gtl_err_);   \
    }                                                                   \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, not at the next sync; the
// launch is counted (launch_count.h).
#define GTL_CUDA_CHECK_LAUNCH()           \
  do {                                    \
    GTL_CUDA_CHECK(cudaGetLastError());   \
    ::gtl::detail::count_kernel_launch(); \
  } while (0)

#ifdef GTL_HAVE_CUBLAS
#include <cublas_v2.h>
#define GTL_CUBLAS_CHECK(call)                                                    \
  do {                                                                            \
    cublasStatus_t gtl_st_ = (call);                                              \
    if (gtl_st_ != CUBLAS_STATUS_SUCCESS)                                         \
      throw ::gtl::CudaError("cuBLAS", #call, __FILE__, __LINE__,                 \
                             std::string(cublasGetStatusString(gtl_st_)) + " (" + \
                                 cublasGetStatusName(gtl_st_) + ")");             \
  } while (0)
#endif

#ifdef GTL_HAVE_CUDNN
#include <cudnn.h>
#define GTL_CUDNN_CHECK(call)                                                                   \
  do {                                                                                          \
    cudnnStatus_t gtl_st_ = (call);                                                             \
    if (gtl_st_ != CUDNN_STATUS_SUCCESS)                                                        \
      throw ::gtl::CudaError("cuDNN", #call, __FILE__, __LINE__, cudnnGetErrorString(gtl_st_)); \
  } while (0)
#endif

#ifdef GTL_HAVE_NCCL
#include <nccl.h>
#define GTL_NCCL_CHECK(call)                                                           \
  do {                                                                                 \
    ncclResult_t gtl_st_ = (call);                                                     \
    if (gtl_st_ != ncclSuccess)                                                        \
      throw ::gtl::CudaError(                                                          \
          "NCCL", #call, __FILE__, __LINE__,                                           \
          std::string(ncclGetErrorString(gtl_st_)) + " " + ncclGetLastError(nullptr)); \
  } while (0)
#endif
