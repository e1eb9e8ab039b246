// Lab 01, TODO 1: devices.
//
// Device-agnostic code asks which device to use once, then passes a gtl::Device around. The
// core's runtime already wraps the CUDA calls you need: gtl::cuda_device_count(),
// gtl::cuda_available() and gtl::device_properties(index) (common/gtl/runtime/device.h).
#include <cstdio>

#include "gpu_basics.h"
#include "gtl/runtime/error.h"

namespace lab01 {

gtl::Device choose_device(const std::string& request) {
  // TODO(lab01) step 1a: "auto" -> cuda:0 when a GPU is usable, else cpu. Otherwise parse the
  // request with gtl::Device::parse and, for cuda:N, check N against gtl::cuda_device_count():
  // throw gtl::Error("cuda:3 requested but only 1 GPU is visible (...)") when it is out of range,
  // with the reason in the parentheses (gtl::cuda_unavailable_reason() when there is none, else
  // the valid indices). gtl::default_device() already is the "auto" rule. About 10 lines.
  throw gtl::Error("TODO(lab01) step 1a: choose_device(\"" + request + "\") is not implemented");
  // END TODO(lab01)
}

std::string describe_device(int index) {
  // TODO(lab01) step 1b: read gtl::device_properties(index) and format one line:
  // "<name>: <SMs> SMs, <memory, 1 decimal> GiB, <peak bandwidth, 0 decimals> GB/s,
  // sm_<major><minor>". Hint: std::snprintf. About 6 lines.
  throw gtl::Error("TODO(lab01) step 1b: describe_device(" + std::to_string(index) +
                   ") is not implemented");
  // END TODO(lab01)
}

}  // namespace lab01
