// Allocators: where every tensor's bytes come from, and the exact statistics the memory labs
// grade on.
//
// Each Allocator serves one device and keeps its own MemoryStats:
// clang-format off
//   allocated  bytes handed out to tensors and not yet returned (what your model holds);
//   reserved   bytes taken from the system (malloc / cudaMalloc) and not yet given back: allocated
//              plus what a caching allocator keeps for reuse;
//   peak_*     the highest value since the last reset_peak_stats().
// clang-format on
// Sizes are counted as requested by the caller (allocated) and as taken from the system
// (reserved, after rounding), so a 1-byte tensor shows 1 allocated byte.
//
// Per-rank statistics: simulated ranks sharing one CPU or GPU each install their own allocator
// on their thread with AllocatorScope; tensors they create are charged to it and remember it.
//
// A memory limit makes allocate() throw OutOfMemoryError, a catchable error with a PyTorch-style
// message, on the CPU exactly as on the GPU, so out-of-memory handling can be taught anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gtl/runtime/device.h"
#include "gtl/runtime/error.h"
#include "gtl/runtime/stream.h"

namespace gtl {

struct MemoryStats {
  int64_t allocated_bytes = 0;
  int64_t reserved_bytes = 0;
  int64_t peak_allocated_bytes = 0;
  int64_t peak_reserved_bytes = 0;
  int64_t num_allocs = 0;         // allocate() calls that succeeded
  int64_t num_frees = 0;          // deallocate() calls
  int64_t num_system_allocs = 0;  // malloc / cudaMalloc / cudaMallocHost calls
  int64_t num_system_frees = 0;   // free / cudaFree / cudaFreeHost calls
  int64_t num_ooms = 0;           // OutOfMemoryError thrown
};

class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(Device device, int64_t requested, const MemoryStats& stats, int64_t limit,
                   const std::string& detail = "");
  Device device() const { return device_; }
  int64_t requested_bytes() const { return requested_; }

 private:
  Device device_;
  int64_t requested_;
};

// "1.50 MiB": byte counts as people read them (used in messages and reports).
std::string format_bytes(int64_t bytes);

class Allocator {
 public:
  explicit Allocator(Device device) : device_(device) {}
  virtual ~Allocator() = default;
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  Device device() const { return device_; }
  virtual std::string name() const = 0;

  // Returns `bytes` bytes (aligned to at least 256) usable on `stream`; nullptr for 0 bytes.
  // Throws OutOfMemoryError when the limit or the device runs out.
  virtual void* allocate(std::size_t bytes, const Stream& stream = Stream()) = 0;
  virtual void deallocate(void* ptr) = 0;
  // Tells a stream-aware allocator that `ptr` is also used on `stream`: its memory is not
  // reused until the work queued there so far has finished. No-op elsewhere.
  virtual void record_stream(void* ptr, const Stream& stream) {}
  // Returns cached, unused memory to the system (reserved drops to what is allocated and
  // cannot be released). No-op for allocators that do not cache.
  virtual void empty_cache() {}

  MemoryStats stats() const;
  void reset_peak_stats();  // peaks := current values
  void reset_stats();       // counters := 0, peaks := current values
  // While `log` is set, every allocate() and deallocate() this allocator counts appends its change
  // of allocated bytes (+bytes, -bytes) to *log, in order: the raw events a peak is made of, so
  // a figure such as peak_allocated_bytes can be derived again from them (a judge does).
  // nullptr stops recording; the vector must outlive the recording.
  void record_events(std::vector<int64_t>* log);
  // Upper bound on reserved bytes; 0 means no limit beyond the device's own.
  void set_memory_limit(int64_t bytes);
  int64_t memory_limit() const;

 protected:
  // Bookkeeping for implementations; each takes the stats lock.
  void note_alloc(int64_t bytes);
  void note_free(int64_t bytes);
  void note_system_alloc(int64_t bytes);
  void note_system_free(int64_t bytes);
  // True when reserving `bytes` more would exceed the limit.
  bool would_exceed_limit(int64_t bytes) const;
  // Counts the OOM and throws it.
  [[noreturn]] void throw_oom(int64_t requested, const std::string& detail = "");

 private:
  const Device device_;
  mutable std::mutex stats_mutex_;
  MemoryStats stats_;
  int64_t limit_ = 0;
  std::vector<int64_t>* events_ = nullptr;
};

// Plain host memory (aligned new/delete): reserved == allocated.
std::shared_ptr<Allocator> make_cpu_allocator();
// Page-locked host memory (cudaMallocHost): copies from it run asynchronously at full PCIe
// speed. In a CPU-only build it falls back to ordinary memory and says so in name().
std::shared_ptr<Allocator> make_pinned_allocator();
// PyTorch-style caching allocator on cuda:`device_index` (see cuda_caching_allocator.h).
std::shared_ptr<Allocator> make_cuda_caching_allocator(int device_index);

// The allocator tensors on `device` use on this thread: the innermost AllocatorScope for that
// device type, else the process-wide default (created on first use).
std::shared_ptr<Allocator> current_allocator(Device device);
// The process-wide pinned host allocator (for staging buffers and the data loader).
std::shared_ptr<Allocator> pinned_allocator();

// Installs `allocator` as current for its device on this thread until the scope ends.
class AllocatorScope {
 public:
  explicit AllocatorScope(std::shared_ptr<Allocator> allocator);
  ~AllocatorScope();
  AllocatorScope(const AllocatorScope&) = delete;
  AllocatorScope& operator=(const AllocatorScope&) = delete;

 private:
  std::shared_ptr<Allocator> previous_;
  Device device_;
};

// Stops `allocator`'s event log (record_events) when the scope ends, exceptions included, so the
// allocator never appends to a log that is gone. Given a log, it also starts recording into it;
// without one, the owner starts the log when it chooses (the last step of a run, say).
class EventLogScope {
 public:
  explicit EventLogScope(Allocator& allocator, std::vector<int64_t>* log = nullptr)
      : allocator_(allocator) {
    if (log != nullptr) allocator_.record_events(log);
  }
  ~EventLogScope() { allocator_.record_events(nullptr); }
  EventLogScope(const EventLogScope&) = delete;
  EventLogScope& operator=(const EventLogScope&) = delete;

 private:
  Allocator& allocator_;
};

}  // namespace gtl
