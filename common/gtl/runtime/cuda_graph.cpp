#include "gtl/runtime/cuda_graph.h"

#include <exception>
#include <string>

#include "gtl/runtime/error.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {

#ifdef GTL_WITH_CUDA

namespace {
// What to look for when a capture fails: the calls a capture refuses, in a student's words.
constexpr const char* kCaptureRules =
    "a captured step may not wait for the GPU (item(), a copy to the host, Stream::synchronize, "
    "empty_cache) nor free device memory, and must queue its work on the current stream; warm "
    "the step up eagerly before capturing (see gtl/runtime/cuda_graph.h)";
}  // namespace

CudaGraph::CudaGraph(Device device) : device_(device) {
  GTL_CHECK(device.is_cuda(), "CudaGraph(" << device << "): graphs record GPU work");
  GTL_CHECK(cuda_available(), "CudaGraph: " << cuda_unavailable_reason());
  stream_ = Stream::create(device);  // the legacy default stream cannot be captured
  pool_ = make_cuda_caching_allocator(device.index());
}

CudaGraph::~CudaGraph() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
}

void CudaGraph::capture(const std::function<void()>& step) {
  GTL_CHECK(exec_ == nullptr,
            "CudaGraph::capture: this graph already holds a step; make a new "
            "graph to record another");
  DeviceGuard guard(device_);
  const Stream caller = current_stream();
  stream_.wait(caller);  // the step reads what the caller's stream wrote before it
  LaunchCounts recorded;
  cudaGraph_t graph = nullptr;
  {
    StreamScope on_graph_stream(stream_);
    AllocatorScope from_pool(pool_);
    detail::LaunchRecording recording(&recorded);
    GTL_CUDA_CHECK(cudaStreamBeginCapture(stream_.handle(), cudaStreamCaptureModeGlobal));
    std::string failure;
    try {
      step();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    const cudaError_t ended = cudaStreamEndCapture(stream_.handle(), &graph);
    if (failure.empty() && ended != cudaSuccess)
      failure = std::string("the capture was invalidated (") + cudaGetErrorName(ended) +
                "): a call during the step is not allowed while capturing";
    if (!failure.empty()) {
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      (void)cudaGetLastError();
      throw Error("CudaGraph::capture: " + failure + ". Hint: " + kCaptureRules);
    }
  }
  size_t nodes = 0;
  const cudaError_t counted = cudaGraphGetNodes(graph, nullptr, &nodes);
  const cudaError_t made = cudaGraphInstantiate(&exec_, graph, 0);
  (void)cudaGraphDestroy(graph);  // the executable graph keeps what it needs
  GTL_CUDA_CHECK(counted);
  GTL_CUDA_CHECK(made);
  nodes_ = static_cast<int64_t>(nodes);
  captured_launches_ = recorded;
}

void CudaGraph::replay() {
  GTL_CHECK(exec_ != nullptr, "CudaGraph::replay: nothing captured yet (call capture first)");
  DeviceGuard guard(device_);
  const Stream caller = current_stream();
  stream_.wait(caller);  // new inputs written on the caller's stream come first
  GTL_CUDA_CHECK(cudaGraphLaunch(exec_, stream_.handle()));
  detail::count_graph_launch();
  caller.wait(stream_);  // the caller's next work reads what the replay wrote
}

#else  // a CPU-only build

CudaGraph::CudaGraph(Device device) : device_(device) {
  GTL_CHECK(false, "CudaGraph: this build has no CUDA backend (configure with a CUDA compiler)");
}
CudaGraph::~CudaGraph() = default;
void CudaGraph::capture(const std::function<void()>&) {}
void CudaGraph::replay() {}

#endif

}  // namespace gtl
