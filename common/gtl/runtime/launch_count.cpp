// The per-thread launch counters (launch_count.h).
#include "gtl/runtime/launch_count.h"

namespace gtl {
namespace {
thread_local LaunchCounts counts;
// Where kernel and library launches go: this thread's counts, or a capture's record.
thread_local LaunchCounts* target = nullptr;

LaunchCounts& launches() {
  return target != nullptr ? *target : counts;
}
}  // namespace

LaunchCounts launch_counts() {
  return counts;
}

namespace detail {
void count_kernel_launch() {
  ++launches().kernels;
}
void count_library_launch() {
  ++launches().library;
}
void count_graph_launch() {
  ++launches().graphs;
}

LaunchRecording::LaunchRecording(LaunchCounts* recorded) : previous_(target) {
  target = recorded;
}
LaunchRecording::~LaunchRecording() {
  target = previous_;
}
}  // namespace detail

}  // namespace gtl
