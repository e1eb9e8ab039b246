// Streams and events: the two handles of asynchronous GPU work.
//
// A Stream is an ordered queue of GPU work. Work on different streams may overlap (copies with
// kernels, lab 01 step 6). An Event marks a point in a stream: the host can wait on it, another
// stream can wait on it, and two timing events measure GPU time between them (GpuTimer).
//
// Stream is a cheap, copyable handle (shared ownership); the default-constructed Stream is the
// legacy default stream of the current device. In a CPU-only build streams are empty handles and
// every operation on them is a no-op, so device-agnostic code still runs.
#pragma once

#include <memory>

#include "gtl/runtime/device.h"

// The same opaque handle types cuda_runtime.h declares; no CUDA header needed here.
typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

namespace gtl {

class Event;

class Stream {
 public:
  Stream() = default;  // the default stream (handle nullptr)
  // A new non-blocking stream on `device` (does not synchronise with the default stream).
  static Stream create(Device device = Device::cuda(0));

  cudaStream_t handle() const { return handle_ ? handle_.get() : nullptr; }
  Device device() const { return device_; }
  bool is_default() const { return handle() == nullptr; }
  // Blocks the host until all work queued on this stream has finished.
  void synchronize() const;
  // Makes all future work on this stream wait until all work queued so far on `other` is done.
  void wait(const Stream& other) const;
  // Makes all future work on this stream wait until the GPU reaches `event` (no host wait).
  void wait(const Event& event) const;

 private:
  std::shared_ptr<CUstream_st> handle_;
  Device device_ = Device::cuda(0);
};

class Event {
 public:
  explicit Event(bool enable_timing = false);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(const Stream& stream = Stream());
  void synchronize() const;  // host waits for the recorded point
  bool query() const;        // true once the recorded work has completed
  // Milliseconds of GPU time between two recorded timing events (waits for `end` if the GPU has
  // not reached it yet).
  static float elapsed_ms(const Event& start, const Event& end);
  cudaEvent_t handle() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Times GPU work with events. Host timers around an asynchronous launch measure only the launch;
// events measure when the GPU actually started and finished the work in between.
class GpuTimer {
 public:
  explicit GpuTimer(Stream stream = Stream())
      : stream_(std::move(stream)), start_(true), stop_(true) {}
  void start() { start_.record(stream_); }
  void stop() { stop_.record(stream_); }
  float elapsed_ms() const { return Event::elapsed_ms(start_, stop_); }

 private:
  Stream stream_;
  Event start_, stop_;
};

// Blocks until every stream of the current device is idle (cudaDeviceSynchronize).
void device_synchronize();

// The stream that ops on this thread enqueue their GPU work on: the innermost StreamScope's,
// else the default stream. Simulated ranks sharing a GPU each work in their own StreamScope.
Stream current_stream();

class StreamScope {
 public:
  explicit StreamScope(Stream stream);
  ~StreamScope();
  StreamScope(const StreamScope&) = delete;
  StreamScope& operator=(const StreamScope&) = delete;

 private:
  Stream previous_;
};

}  // namespace gtl
