// Lab 01, TODO 2: error checking.
//
// Almost every CUDA runtime call returns a cudaError_t, and a kernel launch reports its errors
// through cudaGetLastError(). Ignore them and a failure surfaces far away, as wrong numbers or a
// crash in an unrelated call. Wrap every call:
//
//   LAB_CHECK(cudaMalloc(&ptr, bytes));
//   my_kernel<<<grid, block>>>(...);  LAB_CHECK(cudaGetLastError());
//
// On failure, throw std::runtime_error with a message that names the call as written, where it
// is (file:line) and the error: "cudaMalloc(&ptr, bytes) failed at vector_add.cu:42:
// cudaErrorMemoryAllocation: out of memory". The tests provoke an error and read that message
// (the core's GTL_CUDA_CHECK words its messages differently: do not copy it).
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace lab01 {

inline void check_cuda(cudaError_t error, const char* call, const char* file, int line) {
  // SOLUTION(lab01) step 2
  if (error == cudaSuccess) return;
  // Clears the error so that later calls do not report it again. That holds for ordinary errors
  // only: a sticky one (a kernel fault such as cudaErrorIllegalAddress) corrupts the context, and
  // every later call fails with it until the process exits.
  (void)cudaGetLastError();
  std::string where = file;
  where = where.substr(where.find_last_of('/') + 1);
  throw std::runtime_error(std::string(call) + " failed at " + where + ":" + std::to_string(line) +
                           ": " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
  // END SOLUTION(lab01)
}

}  // namespace lab01

#define LAB_CHECK(call) ::lab01::check_cuda((call), #call, __FILE__, __LINE__)
