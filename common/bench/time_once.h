// Seconds of one call of fn: GPU events around it on the GPU (work queued on current_stream()),
// a steady clock on the CPU. For benchmarks that time a whole step with UseManualTime; kernels
// that need an L2 flush and device-wide synchronisation use timed_loop (gpu_timed_loop.h).
#pragma once

#include <chrono>
#include <functional>

#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"

namespace gtl::bench {

inline double time_once(Device device, const std::function<void()>& fn) {
  if (device.is_cuda()) {
    GpuTimer timer(current_stream());
    timer.start();
    fn();
    timer.stop();
    return timer.elapsed_ms() * 1e-3;
  }
  const auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace gtl::bench
