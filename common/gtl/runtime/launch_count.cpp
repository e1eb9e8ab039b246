// The per-thread launch counters (launch_count.h).
#include "gtl/runtime/launch_count.h"

namespace gtl {
namespace {
thread_local LaunchCounts counts;
}  // namespace

LaunchCounts launch_counts() {
  return counts;
}

namespace detail {
void count_kernel_launch() {
  ++counts.kernels;
}
void count_library_launch() {
  ++counts.library;
}
}  // namespace detail

}  // namespace gtl
