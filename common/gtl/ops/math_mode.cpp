// The per-thread math-mode switches declared in math_mode.h.
#include "gtl/ops/math_mode.h"

namespace gtl::ops {

namespace {
thread_local bool t_tf32 = false;
thread_local bool t_cudnn_benchmark = false;
thread_local bool t_row_invariant = false;
}  // namespace

bool tf32_enabled() {
  return t_tf32;
}
void set_tf32_enabled(bool enabled) {
  t_tf32 = enabled;
}

bool cudnn_benchmark_enabled() {
  return t_cudnn_benchmark;
}
void set_cudnn_benchmark(bool enabled) {
  t_cudnn_benchmark = enabled;
}

bool row_invariant_enabled() {
  return t_row_invariant;
}
void set_row_invariant(bool enabled) {
  t_row_invariant = enabled;
}

}  // namespace gtl::ops
