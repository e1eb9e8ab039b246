// The CUDA SegmentSource (see cuda_caching_allocator.h for what it answers and why).
#include "gtl/memory/cuda_caching_allocator.h"

#include <string>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/host_sync.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {

#ifdef GTL_WITH_CUDA

namespace {

class CudaSegmentSource final : public SegmentSource {
 public:
  explicit CudaSegmentSource(int device_index) : device_(Device::cuda(device_index)) {}

  // Events are created once and recycled: cudaEventCreate is not free, and a training loop that
  // uses record_stream records events at every step.
  ~CudaSegmentSource() override {
    for (cudaEvent_t e : spare_events_) (void)cudaEventDestroy(e);  // may run after CUDA unloads
  }

  std::string name() const override { return device_.str(); }

  void* allocate_segment(std::size_t bytes) override {
    DeviceGuard guard(device_);
    void* ptr = nullptr;
    // A graph's private pool grows during its capture (CudaGraph). cudaMalloc queues nothing, but
    // a capture in global mode refuses it on every thread as "potentially unsafe" (it may wait for
    // the device), so this thread relaxes its capture mode for the one call and restores it.
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    GTL_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    const cudaError_t err = cudaMalloc(&ptr, bytes);
    GTL_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    if (err == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear it: running out is an answer, not a broken context
      return nullptr;
    }
    GTL_CUDA_CHECK(err);
    return ptr;
  }

  void free_segment(void* ptr, std::size_t) override {
    DeviceGuard guard(device_);
    GTL_CUDA_CHECK(cudaFree(ptr));
  }

  Event record_event(cudaStream_t stream) override {
    DeviceGuard guard(device_);
    cudaEvent_t event = nullptr;
    if (spare_events_.empty()) {
      GTL_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    } else {
      event = spare_events_.back();
      spare_events_.pop_back();
    }
    GTL_CUDA_CHECK(cudaEventRecord(event, stream));
    return event;
  }

  bool event_completed(Event event) override {
    const cudaError_t err = cudaEventQuery(static_cast<cudaEvent_t>(event));
    if (err == cudaErrorNotReady) {
      (void)cudaGetLastError();  // "not ready" is an answer too
      return false;
    }
    GTL_CUDA_CHECK(err);
    return true;
  }

  void release_event(Event event) override {
    spare_events_.push_back(static_cast<cudaEvent_t>(event));
  }

  void synchronize() override {
    DeviceGuard guard(device_);
    GTL_CUDA_CHECK(cudaDeviceSynchronize());
    detail::count_host_sync(detail::HostSync::Device);
  }

 private:
  const Device device_;
  std::vector<cudaEvent_t> spare_events_;  // guarded by the allocator's lock
};

}  // namespace

std::shared_ptr<SegmentSource> make_cuda_segment_source(int device_index) {
  GTL_CHECK(cuda_available(),
            "make_cuda_segment_source(" << device_index << "): " << cuda_unavailable_reason());
  GTL_CHECK(device_index >= 0 && device_index < cuda_device_count(),
            "make_cuda_segment_source: no device cuda:" << device_index << " (this machine has "
                                                        << cuda_device_count() << ")");
  return std::make_shared<CudaSegmentSource>(device_index);
}

#else  // CPU-only build

std::shared_ptr<SegmentSource> make_cuda_segment_source(int device_index) {
  throw Error("make_cuda_segment_source(" + std::to_string(device_index) +
              "): " + cuda_unavailable_reason());
}

#endif

std::shared_ptr<Allocator> make_cuda_caching_allocator(int device_index) {
  return std::make_shared<CachingAllocator>(Device::cuda(device_index),
                                            make_cuda_segment_source(device_index));
}

}  // namespace gtl
