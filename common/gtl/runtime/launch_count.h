// Launch counts: how many kernels the core put on the GPU's queues.
//
//   const LaunchCounts before = launch_counts();
//   Tensor y = ops::add(a, b);                       // one elementwise kernel
//   (launch_counts() - before).kernels == 1
//
// Why count them: each launch costs the host a few microseconds, whatever the kernel does. A step
// of many small kernels is bound by the launches, not by the GPU (the GPU waits between them);
// CUDA graphs, fusion and larger batches all attack that count. Counting them exactly shows what
// a change removed, on any machine: the emulator (common/emulator) counts the same launches.
//
// What is counted, per host thread: `kernels`, each of the core's own kernel launches (every one
// is followed by GTL_CUDA_CHECK_LAUNCH, which counts it); `library`, each cuBLAS GEMM and cuDNN
// convolution call (one or more kernels of the library's choosing; cuDNN's benchmark search, once
// per shape, is not counted); `graphs`, each launch of a captured CUDA graph (CudaGraph::replay,
// cuda_graph.h): one launch, however many kernels the graph holds. Kernels and library calls
// queued while the thread captures a graph are recorded, not launched: they count in the graph's
// own figures (CudaGraph::captured_launches), not here. Counts only grow; take differences.
#pragma once

#include <cstdint>

namespace gtl {

struct LaunchCounts {
  int64_t kernels = 0;  // the core's own kernels
  int64_t library = 0;  // cuBLAS and cuDNN calls that launch work
  int64_t graphs = 0;   // captured graphs launched

  int64_t total() const { return kernels + library + graphs; }
  LaunchCounts operator-(const LaunchCounts& o) const {
    return {kernels - o.kernels, library - o.library, graphs - o.graphs};
  }
  LaunchCounts& operator+=(const LaunchCounts& o) {
    kernels += o.kernels, library += o.library, graphs += o.graphs;
    return *this;
  }
  bool operator==(const LaunchCounts&) const = default;
};

// This thread's launches since it started.
LaunchCounts launch_counts();

namespace detail {
void count_kernel_launch();
void count_library_launch();
void count_graph_launch();
// While a LaunchRecording lives, this thread's kernel and library launches are added to
// `*recorded` instead of its launch counts (a stream capture records them; CudaGraph uses it).
class LaunchRecording {
 public:
  explicit LaunchRecording(LaunchCounts* recorded);
  ~LaunchRecording();
  LaunchRecording(const LaunchRecording&) = delete;
  LaunchRecording& operator=(const LaunchRecording&) = delete;

 private:
  LaunchCounts* previous_;
};
}  // namespace detail

}  // namespace gtl
