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
  // SOLUTION(lab01) step 1a
  if (request == "auto") return gtl::default_device();
  const gtl::Device device = gtl::Device::parse(request);
  if (device.is_cuda() && device.index() >= gtl::cuda_device_count()) {
    const int n = gtl::cuda_device_count();
    throw gtl::Error(
        device.str() + " requested but only " + std::to_string(n) + " GPU" +
        (n == 1 ? " is" : "s are") + " visible (" +
        (n == 0 ? gtl::cuda_unavailable_reason() : "use cuda:0..cuda:" + std::to_string(n - 1)) +
        ")");
  }
  return device;
  // END SOLUTION(lab01)
}

std::string describe_device(int index) {
  // SOLUTION(lab01) step 1b
  const gtl::DeviceProperties p = gtl::device_properties(index);
  char line[256];
  std::snprintf(line, sizeof line, "%s: %d SMs, %.1f GiB, %.0f GB/s, sm_%d%d", p.name.c_str(),
                p.multiprocessors, p.total_memory_bytes / double(1 << 30),
                p.peak_memory_bandwidth_gbs(), p.compute_major, p.compute_minor);
  return line;
  // END SOLUTION(lab01)
}

}  // namespace lab01
