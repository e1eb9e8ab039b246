// CUDA graphs: record the GPU work of a step once, then replay it with one launch.
//
//   CudaGraph graph;
//   work();                              // warm-up, eagerly (see below)
//   graph.capture([&] { work(); });      // records work()'s GPU work; runs none of it
//   graph.replay();                      // all of that work again: one launch
//
// Why: every kernel launch costs the host a few microseconds. A step of hundreds of small kernels
// keeps the GPU waiting between them (launch-bound); a graph hands the GPU the whole step at once,
// and the step costs one launch (launch_count.h counts both).
//
// What a captured step must respect (a GPU enforces these; so does the emulator):
//  - No host synchronisation: during capture nothing runs, so there is nothing to wait for.
//    item(), a blocking copy to the host, Stream::synchronize, empty_cache() and cudaFree are
//    refused, and capture() throws, naming the call. Keep host reads out of the step.
//  - Static buffers: a graph keeps the addresses its kernels were given. Inputs live in tensors
//    made before capture and refilled in place before each replay (a new tensor is never seen);
//    outputs are the tensors the step made during capture, rewritten by every replay.
//  - Host values are frozen: a scalar the host passes to a kernel (a learning rate, a step count,
//    a loss scale) keeps its capture-time value at every replay.
//  - Warm up first: library handles, cuDNN's algorithm search and lazily built state are made in
//    an eager run of the step, not inside the capture.
// Memory the step allocates during capture comes from the graph's own pool (a caching allocator
// of its own, pool()), kept while any of its tensors lives: no eager tensor can land on an address
// a replay writes. The step's work is recorded on the graph's stream; replay runs there, after the
// work already queued on the caller's stream, and the caller's stream waits for it, so replay is
// stream-ordered like any op. A CPU-only build or a machine without a GPU has no graphs: the
// constructor says so. On the CPU emulator a graph is a list of recorded launches run in order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/launch_count.h"
#include "gtl/runtime/stream.h"

typedef struct CUgraphExec_st* cudaGraphExec_t;  // as cuda_runtime.h declares it

namespace gtl {

class CudaGraph {
 public:
  explicit CudaGraph(Device device = Device::cuda(0));
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Records the GPU work `step` queues (on this thread) into the graph; runs none of it. Once per
  // graph. Throws, naming the refused call, when the step does what a capture forbids.
  void capture(const std::function<void()>& step);
  // Runs the recorded work once: one graph launch.
  void replay();

  bool captured() const { return exec_ != nullptr; }
  // The kernel and library launches the step queued while it was captured: what one replay does
  // in one launch.
  const LaunchCounts& captured_launches() const { return captured_launches_; }
  // The graph's nodes (kernels, copies, memsets, library calls' kernels as the runtime records
  // them; on the emulator one node per kernel, copy, memset or library call).
  int64_t nodes() const { return nodes_; }
  // The pool the step's allocations came from (its statistics: the graph's static memory).
  const Allocator& pool() const { return *pool_; }
  const Stream& stream() const { return stream_; }

 private:
  Device device_;
  Stream stream_;
  std::shared_ptr<Allocator> pool_;
  cudaGraphExec_t exec_ = nullptr;
  LaunchCounts captured_launches_;
  int64_t nodes_ = 0;
};

}  // namespace gtl
