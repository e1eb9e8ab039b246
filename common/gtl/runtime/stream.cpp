#include "gtl/runtime/stream.h"

#include "gtl/runtime/error.h"
#include "gtl/runtime/host_sync.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {

#ifdef GTL_WITH_CUDA

Stream Stream::create(Device device) {
  GTL_CHECK(device.is_cuda(), "Stream::create(" << device << "): streams live on a GPU");
  DeviceGuard guard(device);
  cudaStream_t raw = nullptr;
  GTL_CUDA_CHECK(cudaStreamCreateWithFlags(&raw, cudaStreamNonBlocking));
  Stream s;
  s.device_ = device;
  // The last owner waits for the stream's work before destroying it. cudaStreamDestroy alone
  // returns at once, and a new stream may then get the same handle: the caching allocator, whose
  // free blocks are pooled per stream handle, would hand that stream memory the old stream's
  // kernels still use. Streams live long (one per rank, per loader), so the wait is rare.
  s.handle_.reset(raw, [](cudaStream_t h) {
    (void)cudaStreamSynchronize(h);
    (void)cudaStreamDestroy(h);
  });
  return s;
}

void Stream::synchronize() const {
  // Without a GPU the default stream has no work: device-agnostic code may still sync on it.
  if (is_default() && !cuda_available()) return;
  GTL_CUDA_CHECK(cudaStreamSynchronize(handle()));
  detail::count_host_sync(detail::HostSync::Stream);
}

void Stream::wait(const Stream& other) const {
  Event e;
  e.record(other);
  wait(e);
}

void Stream::wait(const Event& event) const {
  GTL_CUDA_CHECK(cudaStreamWaitEvent(handle(), event.handle(), 0));
}

Event::Event(bool enable_timing) {
  if (!cuda_available()) return;  // lets CPU fallbacks construct events they never record
  GTL_CUDA_CHECK(
      cudaEventCreateWithFlags(&event_, enable_timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
  if (event_) (void)cudaEventDestroy(event_);
}

void Event::record(const Stream& stream) {
  GTL_CHECK(event_, "Event::record: " << cuda_unavailable_reason());
  GTL_CUDA_CHECK(cudaEventRecord(event_, stream.handle()));
}

void Event::synchronize() const {
  if (!event_) return;
  GTL_CUDA_CHECK(cudaEventSynchronize(event_));
  detail::count_host_sync(detail::HostSync::Event);
}

bool Event::query() const {
  if (!event_) return true;
  cudaError_t e = cudaEventQuery(event_);
  if (e == cudaErrorNotReady) {
    (void)cudaGetLastError();  // "not ready" is an answer, not an error a later check should see
    return false;
  }
  GTL_CUDA_CHECK(e);
  return true;
}

float Event::elapsed_ms(const Event& start, const Event& end) {
  GTL_CHECK(start.event_ && end.event_, "Event::elapsed_ms: " << cuda_unavailable_reason());
  if (!end.query()) end.synchronize();  // a wait (and a count) only if the GPU is not there yet
  float ms = 0.f;
  GTL_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event_, end.event_));
  return ms;
}

void device_synchronize() {
  if (!cuda_available()) return;
  GTL_CUDA_CHECK(cudaDeviceSynchronize());
  detail::count_host_sync(detail::HostSync::Device);
}

#else  // CPU-only build: empty handles, no-ops, and clear errors where a GPU is required.

Stream Stream::create(Device device) {
  throw Error("Stream::create(" + device.str() + "): " + cuda_unavailable_reason());
}
void Stream::synchronize() const {}
void Stream::wait(const Stream&) const {}
void Stream::wait(const Event&) const {}
Event::Event(bool) {}
Event::~Event() = default;
void Event::record(const Stream&) {
  throw Error("Event::record: " + cuda_unavailable_reason());
}
void Event::synchronize() const {}
bool Event::query() const {
  return true;
}
float Event::elapsed_ms(const Event&, const Event&) {
  throw Error("Event::elapsed_ms: " + cuda_unavailable_reason());
}
void device_synchronize() {}

#endif

namespace {
thread_local Stream tls_current_stream;
}  // namespace

Stream current_stream() {
  return tls_current_stream;
}
StreamScope::StreamScope(Stream stream) : previous_(tls_current_stream) {
  tls_current_stream = std::move(stream);
}
StreamScope::~StreamScope() {
  tls_current_stream = std::move(previous_);
}

Event::Event(Event&& other) noexcept : event_(other.event_) {
  other.event_ = nullptr;
}

Event& Event::operator=(Event&& other) noexcept {
  std::swap(event_, other.event_);
  return *this;
}

}  // namespace gtl
