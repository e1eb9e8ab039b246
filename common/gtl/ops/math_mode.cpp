// The process-wide math-mode switches declared in math_mode.h. Atomics, so that threads driving
// different GPUs may read them while one thread flips them between steps.
#include "gtl/ops/math_mode.h"

#include <atomic>

namespace gtl::ops {

namespace {
std::atomic<bool> g_tf32{false};
std::atomic<bool> g_cudnn_benchmark{false};
}  // namespace

bool tf32_enabled() {
  return g_tf32.load(std::memory_order_relaxed);
}
void set_tf32_enabled(bool enabled) {
  g_tf32.store(enabled, std::memory_order_relaxed);
}

bool cudnn_benchmark_enabled() {
  return g_cudnn_benchmark.load(std::memory_order_relaxed);
}
void set_cudnn_benchmark(bool enabled) {
  g_cudnn_benchmark.store(enabled, std::memory_order_relaxed);
}

}  // namespace gtl::ops
