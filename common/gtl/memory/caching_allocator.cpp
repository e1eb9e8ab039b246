// The caching allocator's logic (design in caching_allocator.h), in the order a request meets it:
//   1. round the size and pick a pool;
//   2. look for the best-fitting free block of this stream in that pool;
//   3. failing that, take a new segment from the source (on refusal: release the cache, retry,
//      then throw OutOfMemoryError);
//   4. split off what the request does not need, when the rest is worth keeping;
// and on release:
//   5. if the block was used on other streams, record events there and wait for them;
//   6. merge the block with its free neighbours and put it back in its pool.
//
// Why round to 512 bytes: every block then starts 512-aligned (any vector load is aligned), and
// requests of 1000 and 1010 bytes become the same size, which makes reuse likely.
// Why two pools: small tensors (biases, norms, scalars) come and go far more often than large
// ones. Packing them into 2 MiB segments keeps them from splitting the large segments into
// fragments that no big activation fits in.
// Why events: the GPU runs behind the host. When a tensor used on a side stream (a copy, a
// collective) is freed, that stream may still be reading it; handing the block to a new tensor
// on the allocating stream would let a kernel overwrite data still being read. An event recorded
// on the side stream tells when its reads are done.
#include "gtl/memory/caching_allocator.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include <algorithm>
#include <cstdint>
#include <new>

namespace gtl {

// ---- blocks: pieces of a segment, linked to their neighbours ------------------------------------

struct CachingAllocator::Block {
  Block(void* p, std::size_t s, cudaStream_t st, bool sm)
      : ptr(p), size(s), stream(st), small(sm) {}

  void* ptr;
  std::size_t size;     // rounded; a multiple of kRoundBytes
  cudaStream_t stream;  // the stream whose pool it belongs to (fixed for its segment)
  bool small;           // from a small-pool segment
  bool allocated = false;
  std::size_t requested = 0;  // the caller's byte count, for exact statistics
  Block* prev = nullptr;      // neighbours in the same segment
  Block* next = nullptr;
  int pending_events = 0;             // events to wait for before reuse
  std::vector<cudaStream_t> used_on;  // other streams it was used on (record_stream)

  bool is_free() const { return !allocated && pending_events == 0; }
  bool is_whole_segment() const { return prev == nullptr && next == nullptr; }
};

// Pools are ordered by (stream, size, address): lower_bound finds this stream's best fit.
bool CachingAllocator::BlockOrder::operator()(const Block* a, const Block* b) const {
  const auto sa = reinterpret_cast<std::uintptr_t>(a->stream);
  const auto sb = reinterpret_cast<std::uintptr_t>(b->stream);
  if (sa != sb) return sa < sb;
  if (a->size != b->size) return a->size < b->size;
  return reinterpret_cast<std::uintptr_t>(a->ptr) < reinterpret_cast<std::uintptr_t>(b->ptr);
}

CachingAllocator::CachingAllocator(Device device, std::shared_ptr<SegmentSource> source)
    : Allocator(device), source_(std::move(source)) {
  GTL_CHECK(source_ != nullptr, "CachingAllocator: needs a SegmentSource");
}

// Tensors keep their allocator alive, so no tensor memory is live here. A destructor cannot
// report an error: at process exit the CUDA runtime may already be unloaded, and the operating
// system reclaims the memory anyway.
CachingAllocator::~CachingAllocator() {
  try {
    synchronize_and_process_events();
    release_free_segments();
  } catch (...) {
  }
}

// ---- step 1: sizes ------------------------------------------------------------------------------

std::size_t CachingAllocator::round_size(std::size_t bytes) {
  return (bytes + kRoundBytes - 1) / kRoundBytes * kRoundBytes;
}

std::size_t CachingAllocator::segment_size_for(std::size_t rounded) {
  if (is_small(rounded)) return kSmallSegment;
  if (rounded < kMediumRequest) return kMediumSegment;
  return (rounded + kLargeSegmentRound - 1) / kLargeSegmentRound * kLargeSegmentRound;
}

void* CachingAllocator::allocate_on(std::size_t bytes, cudaStream_t stream) {
  gtl::grading::reference_guard("gtl::CachingAllocator::allocate");
  if (bytes == 0) return nullptr;
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  process_events();  // blocks whose other-stream work has finished become reusable now
  Pool& pool = is_small(size) ? small_pool_ : large_pool_;
  Block* block = find_free_block(pool, stream, size);
  if (block == nullptr) block = new_segment(pool, stream, size, bytes);
  block = split(pool, block, size);
  block->allocated = true;
  block->requested = bytes;
  live_[block->ptr] = block;
  note_alloc(static_cast<int64_t>(bytes));
  return block->ptr;
}

// ---- step 2: best fit ---------------------------------------------------------------------------

CachingAllocator::Block* CachingAllocator::find_free_block(Pool& pool, cudaStream_t stream,
                                                           std::size_t size) {
  Block key(nullptr, size, stream, false);  // address 0 sorts first among equal sizes
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->stream != stream) return nullptr;  // none big enough here
  Block* block = *it;
  pool.erase(it);
  return block;
}

// ---- step 3: a new segment, releasing the cache when the system says no -------------------------

CachingAllocator::Block* CachingAllocator::new_segment(Pool& pool, cudaStream_t stream,
                                                       std::size_t size, std::size_t requested) {
  const std::size_t bytes = segment_size_for(size);
  const auto n = static_cast<int64_t>(bytes);
  auto try_allocate = [&]() -> void* {
    return would_exceed_limit(n) ? nullptr : source_->allocate_segment(bytes);
  };
  void* ptr = try_allocate();
  if (ptr == nullptr) {
    // The cache may hold whole free segments (of other sizes, pools or streams): give them back
    // and try once more. Pending events are waited for first so their blocks can be released.
    synchronize_and_process_events();
    release_free_segments();
    ptr = try_allocate();
  }
  if (ptr == nullptr) {
    const std::string why =
        would_exceed_limit(n)
            ? "a new " + format_bytes(n) + " segment would pass the memory limit"
            : "the " + source_->name() + " device refused a " + format_bytes(n) + " segment";
    throw_oom(static_cast<int64_t>(requested),
              format_bytes(cached_bytes()) + " reserved but unallocated (cached); " + why);
  }
  note_system_alloc(n);
  ++segments_;
  return new Block(ptr, bytes, stream, &pool == &small_pool_);
}

// ---- step 4: split ------------------------------------------------------------------------------

// The rest goes back to the pool when it can serve a later request of its pool: any 512 bytes
// in the small pool; in the large pool only more than 1 MiB, since smaller requests never
// come there and the rest would be a fragment nobody can use.
CachingAllocator::Block* CachingAllocator::split(Pool& pool, Block* block, std::size_t size) {
  const std::size_t rest = block->size - size;
  const bool keep_rest = block->small ? rest >= kRoundBytes : rest > kSmallRequest;
  if (!keep_rest) return block;  // the block keeps its slack
  auto* remainder =
      new Block(static_cast<char*>(block->ptr) + size, rest, block->stream, block->small);
  remainder->prev = block;
  remainder->next = block->next;
  if (block->next != nullptr) block->next->prev = remainder;
  block->next = remainder;
  block->size = size;
  pool.insert(remainder);
  return block;
}

// ---- step 5: release, waiting for other streams -------------------------------------------------

void CachingAllocator::deallocate(void* ptr) {
  gtl::grading::reference_guard("gtl::CachingAllocator::deallocate");
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  GTL_CHECK(it != live_.end(), name() << ": deallocate of a pointer it did not allocate "
                                      << "(or freed twice)");
  Block* block = it->second;
  // Every event is recorded before anything else changes. If one cannot be (a broken CUDA
  // context), the block stays live and counted: returned to the pool with some of its events
  // missing, it could be handed out while a stream still uses it.
  const std::size_t first_event = pending_.size();
  pending_.reserve(first_event + block->used_on.size());
  try {
    for (cudaStream_t stream : block->used_on)
      pending_.emplace_back(source_->record_event(stream), block);
  } catch (...) {
    for (std::size_t i = first_event; i < pending_.size(); ++i)
      source_->release_event(pending_[i].first);
    pending_.resize(first_event);
    throw;
  }
  block->pending_events = static_cast<int>(block->used_on.size());
  block->used_on.clear();
  live_.erase(it);
  block->allocated = false;
  note_free(static_cast<int64_t>(block->requested));
  if (block->pending_events == 0) release_to_pool(block);
}

void CachingAllocator::record_stream_on(void* ptr, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  GTL_CHECK(it != live_.end(), name() << ": record_stream of a pointer it did not allocate "
                                      << "(pass the storage's data pointer, not a view's)");
  Block* block = it->second;
  if (stream == block->stream) return;  // its own stream orders its reuse already
  auto& used = block->used_on;
  if (std::find(used.begin(), used.end(), stream) == used.end()) used.push_back(stream);
}

// Checked on every allocation, never waited for: a block becomes reusable once all its events
// have completed.
void CachingAllocator::process_events() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (!source_->event_completed(it->first)) {
      ++it;
      continue;
    }
    source_->release_event(it->first);
    Block* block = it->second;
    it = pending_.erase(it);
    if (--block->pending_events == 0) release_to_pool(block);
  }
}

void CachingAllocator::synchronize_and_process_events() {
  if (pending_.empty()) return;
  source_->synchronize();
  process_events();
}

// ---- step 6: merge ------------------------------------------------------------------------------

CachingAllocator::Pool& CachingAllocator::pool_of(const Block* block) {
  return block->small ? small_pool_ : large_pool_;
}

void CachingAllocator::release_to_pool(Block* block) {
  Pool& pool = pool_of(block);
  if (block->prev != nullptr && block->prev->is_free()) {  // grow the free block before us
    Block* prev = block->prev;
    pool.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next != nullptr) block->next->prev = prev;
    delete block;
    block = prev;
  }
  if (block->next != nullptr && block->next->is_free()) {  // swallow the free block after us
    Block* next = block->next;
    pool.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next != nullptr) next->next->prev = block;
    delete next;
  }
  pool.insert(block);
}

// ---- giving memory back -------------------------------------------------------------------------

// A segment can be returned only when it is one free block again (fully merged).
void CachingAllocator::release_free_segments() {
  for (Pool* pool : {&small_pool_, &large_pool_}) {
    for (auto it = pool->begin(); it != pool->end();) {
      Block* block = *it;
      if (!block->is_whole_segment()) {
        ++it;
        continue;
      }
      // Freed first: if that throws, the segment stays cached and counted as reserved.
      source_->free_segment(block->ptr, block->size);
      it = pool->erase(it);
      note_system_free(static_cast<int64_t>(block->size));
      --segments_;
      delete block;
    }
  }
}

void CachingAllocator::empty_cache() {
  gtl::grading::reference_guard("gtl::CachingAllocator::empty_cache");
  std::lock_guard<std::mutex> lock(mutex_);
  synchronize_and_process_events();
  release_free_segments();
}

// ---- introspection ------------------------------------------------------------------------------

int64_t CachingAllocator::cached_bytes() const {
  int64_t bytes = 0;
  for (const Pool* pool : {&small_pool_, &large_pool_}) {
    for (const Block* block : *pool) bytes += static_cast<int64_t>(block->size);
  }
  return bytes;
}

CachingAllocator::CacheInfo CachingAllocator::cache_info() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CacheInfo info;
  info.segments = segments_;
  for (const Pool* pool : {&small_pool_, &large_pool_}) {
    for (const Block* block : *pool) {
      const auto size = static_cast<int64_t>(block->size);
      info.free_blocks += 1;
      info.cached_bytes += size;
      info.largest_free_block = std::max(info.largest_free_block, size);
    }
  }
  std::set<const Block*> waiting;
  for (const auto& entry : pending_) waiting.insert(entry.second);
  info.blocks_awaiting_events = static_cast<int64_t>(waiting.size());
  return info;
}

std::size_t CachingAllocator::block_size(void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  GTL_CHECK(it != live_.end(), name() << ": block_size of a pointer it did not allocate");
  return it->second->size;
}

// ---- the host source ----------------------------------------------------------------------------

namespace {
constexpr std::align_val_t kSegmentAlignment{CachingAllocator::kRoundBytes};
}  // namespace

void* HostSegmentSource::allocate_segment(std::size_t bytes) {
  gtl::grading::reference_guard("gtl::HostSegmentSource::allocate_segment");
  std::lock_guard<std::mutex> lock(mutex_);
  const auto n = static_cast<int64_t>(bytes);
  if (options_.capacity_bytes > 0 && segment_bytes_ + n > options_.capacity_bytes) return nullptr;
  void* ptr = ::operator new(bytes, kSegmentAlignment, std::nothrow);
  if (ptr != nullptr) segment_bytes_ += n;
  return ptr;
}

void HostSegmentSource::free_segment(void* ptr, std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  ::operator delete(ptr, kSegmentAlignment);
  segment_bytes_ -= static_cast<int64_t>(bytes);
}

SegmentSource::Event HostSegmentSource::record_event(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::make_unique<HostEvent>(HostEvent{stream, !options_.manual_events}));
  return events_.back().get();
}

bool HostSegmentSource::event_completed(Event event) {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<HostEvent*>(event)->done;
}

void HostSegmentSource::release_event(Event event) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(events_, [&](const auto& e) { return e.get() == event; });
}

void HostSegmentSource::complete_events(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : events_) {
    if (e->stream == stream) e->done = true;
  }
}

void HostSegmentSource::complete_all_events() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : events_) e->done = true;
}

int64_t HostSegmentSource::pending_events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::count_if(events_.begin(), events_.end(), [](const auto& e) { return !e->done; });
}

int64_t HostSegmentSource::segment_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return segment_bytes_;
}

std::shared_ptr<Allocator> make_cpu_caching_allocator() {
  gtl::grading::reference_guard("gtl::make_cpu_caching_allocator");
  return std::make_shared<CachingAllocator>(Device::cpu(), std::make_shared<HostSegmentSource>());
}

}  // namespace gtl
