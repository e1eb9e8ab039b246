// Errors of the training core. Every failure throws; the library never calls exit().
//
//   GTL_CHECK(cond, msg << parts)   a precondition on arguments, with a streamed message
//   GTL_CUDA_CHECK(call)            a CUDA runtime call (see cuda_check.h for cuBLAS, cuDNN, NCCL)
//
// A failed CUDA-family call throws gtl::CudaError naming the call, file:line and the library's
// own error string, so a student sees *which* call failed and why, not just "error 700".
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace gtl {

// Base of every error the core throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A CUDA, cuBLAS, cuDNN or NCCL call returned an error.
class CudaError : public Error {
 public:
  CudaError(const std::string& library, const std::string& call, const char* file, int line,
            const std::string& reason);
  const std::string& call() const { return call_; }

 private:
  std::string call_;
};

namespace detail {
[[noreturn]] void throw_check_failure(const char* condition, const char* file, int line,
                                      const std::string& message);
}  // namespace detail

}  // namespace gtl

#define GTL_CHECK(cond, msg)                                                               \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::ostringstream gtl_check_msg_;                                                   \
      gtl_check_msg_ << msg;                                                               \
      ::gtl::detail::throw_check_failure(#cond, __FILE__, __LINE__, gtl_check_msg_.str()); \
    }                                                                                      \
  } while (0)
