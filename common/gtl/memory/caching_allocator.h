// CachingAllocator: PyTorch's CUDA caching allocator, written so that every line of its logic
// runs on a CPU.
//
// Why cache at all: cudaMalloc costs tens of microseconds and cudaFree synchronises the whole
// device, while a training step allocates and frees thousands of tensors. So the allocator takes
// memory from the system in big segments, carves tensors out of them, and keeps freed blocks for
// the next request of a similar size. In a steady-state training loop no system call is made.
//
// The price is that memory shows up twice in the statistics (allocator.h): `allocated` is what
// tensors hold, `reserved` is what the cache took from the system. The gap between them is the
// cache, the rounding, and fragmentation: free blocks too small, or on the wrong stream, for
// the request at hand.
//
// The policy, as PyTorch's (see caching_allocator.cpp for the reasons):
//   - sizes are rounded up to 512 bytes;
//   - requests <= 1 MiB come from 2 MiB segments (the small pool), 1-10 MiB from 20 MiB
//     segments, larger ones from a segment of their own rounded up to 2 MiB (the large pool);
//   - free blocks are kept per stream and chosen best-fit; blocks are split on allocation and
//     merged with free neighbours of the same segment on release;
//   - a block also used on another stream (record_stream) is reused only after events recorded
//     on those streams have completed;
//   - when the system (or the memory limit) refuses a new segment, cached segments are released
//     and the request retried before OutOfMemoryError is thrown.
//
// The device is hidden behind a SegmentSource: where segments come from and how stream work is
// tracked. HostSegmentSource (below) uses host memory, so the memory lab can show caching,
// reserved vs allocated and fragmentation on a laptop, and the tests can complete stream events
// by hand. The CUDA source (cuda_caching_allocator.h) only supplies cudaMalloc, cudaFree and
// events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/stream.h"

namespace gtl {

// Where a caching allocator's memory comes from, and how it learns that stream work is done.
// The allocator calls it with its own lock held, so a source needs no lock of its own.
class SegmentSource {
 public:
  // An opaque marker of "the work queued on a stream so far" (a cudaEvent_t on the GPU).
  using Event = void*;

  virtual ~SegmentSource() = default;
  virtual std::string name() const = 0;
  // `bytes` bytes, aligned to at least 512; nullptr when the device is out of memory.
  virtual void* allocate_segment(std::size_t bytes) = 0;
  virtual void free_segment(void* ptr, std::size_t bytes) = 0;
  // Records an event after the work queued on `stream` so far.
  virtual Event record_event(cudaStream_t stream) = 0;
  // True once the work before the event has finished (never blocks).
  virtual bool event_completed(Event event) = 0;
  // The allocator is done with the event (a source may recycle it).
  virtual void release_event(Event event) = 0;
  // Blocks until all work on every stream has finished: every event is then complete.
  virtual void synchronize() = 0;
};

// Host memory as a "device". By default its events complete at once (host code is synchronous).
// With manual_events they complete only when complete_events() is called, which lets a test act
// out a GPU stream that is still busy. capacity_bytes > 0 makes it refuse segments beyond that
// total, like a GPU whose memory is full.
class HostSegmentSource final : public SegmentSource {
 public:
  struct Options {
    bool manual_events = false;
    int64_t capacity_bytes = 0;
  };
  HostSegmentSource() : HostSegmentSource(Options{}) {}
  explicit HostSegmentSource(Options options) : options_(options) {}

  std::string name() const override { return "host"; }
  void* allocate_segment(std::size_t bytes) override;
  void free_segment(void* ptr, std::size_t bytes) override;
  Event record_event(cudaStream_t stream) override;
  bool event_completed(Event event) override;
  void release_event(Event event) override;
  void synchronize() override { complete_all_events(); }

  // "The work queued on `stream` so far has finished": completes its recorded events.
  void complete_events(cudaStream_t stream);
  void complete_all_events();
  // Events recorded and not yet completed.
  int64_t pending_events() const;
  // Bytes of segments currently taken.
  int64_t segment_bytes() const;

 private:
  struct HostEvent {
    cudaStream_t stream;
    bool done;
  };
  const Options options_;
  int64_t segment_bytes_ = 0;
  std::vector<std::unique_ptr<HostEvent>> events_;
  mutable std::mutex mutex_;  // the test thread completes events while the allocator runs
};

class CachingAllocator final : public Allocator {
 public:
  static constexpr std::size_t kRoundBytes = 512;          // every size is a multiple
  static constexpr std::size_t kSmallRequest = 1 << 20;    // <= 1 MiB: small pool
  static constexpr std::size_t kSmallSegment = 2 << 20;    // small-pool segments
  static constexpr std::size_t kMediumRequest = 10 << 20;  // < 10 MiB: 20 MiB segments
  static constexpr std::size_t kMediumSegment = 20 << 20;
  static constexpr std::size_t kLargeSegmentRound = 2 << 20;  // larger: own segment

  CachingAllocator(Device device, std::shared_ptr<SegmentSource> source);
  ~CachingAllocator() override;

  std::string name() const override { return "caching (" + source_->name() + ")"; }
  void* allocate(std::size_t bytes, const Stream& stream = Stream()) override {
    return allocate_on(bytes, stream.handle());
  }
  void deallocate(void* ptr) override;
  void record_stream(void* ptr, const Stream& stream) override {
    record_stream_on(ptr, stream.handle());
  }
  // Waits for pending stream events, then returns every fully free segment to the source.
  void empty_cache() override;

  // The same with raw stream handles: CPU tests name their "streams" with made-up handles.
  void* allocate_on(std::size_t bytes, cudaStream_t stream);
  void record_stream_on(void* ptr, cudaStream_t stream);

  // The request size after rounding, and the segment a new one of that size would come from.
  static std::size_t round_size(std::size_t bytes);
  static std::size_t segment_size_for(std::size_t rounded);
  static bool is_small(std::size_t rounded) { return rounded <= kSmallRequest; }

  // A picture of the cache, for labs and tests.
  struct CacheInfo {
    int64_t segments = 0;                // segments taken from the source
    int64_t free_blocks = 0;             // blocks ready for reuse
    int64_t cached_bytes = 0;            // their bytes: reserved but unallocated
    int64_t largest_free_block = 0;      // the biggest request (of its pool and stream)
                                         // served without a new segment
    int64_t blocks_awaiting_events = 0;  // freed, waiting for another stream's work
  };
  CacheInfo cache_info() const;
  // The rounded size of the live block at `ptr` (what the cache set aside for it).
  std::size_t block_size(void* ptr) const;

 private:
  struct Block;
  struct BlockOrder {
    bool operator()(const Block* a, const Block* b) const;
  };
  using Pool = std::set<Block*, BlockOrder>;

  Block* find_free_block(Pool& pool, cudaStream_t stream, std::size_t size);
  Block* new_segment(Pool& pool, cudaStream_t stream, std::size_t size, std::size_t requested);
  Block* split(Pool& pool, Block* block, std::size_t size);
  void release_to_pool(Block* block);
  void process_events();
  void synchronize_and_process_events();
  void release_free_segments();
  Pool& pool_of(const Block* block);
  int64_t cached_bytes() const;

  std::shared_ptr<SegmentSource> source_;
  mutable std::mutex mutex_;
  Pool small_pool_, large_pool_;            // free blocks, ordered (stream, size, ptr)
  std::unordered_map<void*, Block*> live_;  // allocated blocks by pointer
  std::vector<std::pair<SegmentSource::Event, Block*>> pending_;  // freed, awaiting events
  int64_t segments_ = 0;
};

// Host memory through a caching allocator whose events complete at once: the memory lab's
// CPU stand-in for the CUDA caching allocator.
std::shared_ptr<Allocator> make_cpu_caching_allocator();

}  // namespace gtl
