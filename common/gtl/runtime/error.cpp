#include "gtl/runtime/error.h"

#include <filesystem>

namespace gtl {

namespace {
std::string where(const char* file, int line) {
  return std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
}
}  // namespace

CudaError::CudaError(const std::string& library, const std::string& call, const char* file,
                     int line, const std::string& reason)
    : Error(library + " error: " + call + " failed at " + where(file, line) + ": " + reason),
      call_(call) {}

namespace detail {
void throw_check_failure(const char* condition, const char* file, int line,
                         const std::string& message) {
  throw Error(message + " [check '" + condition + "' failed at " + where(file, line) + "]");
}
}  // namespace detail

}  // namespace gtl
