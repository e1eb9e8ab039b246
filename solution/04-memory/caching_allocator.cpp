// Lab 04, TODO 2: a caching allocator for host memory (the rules are in memory_lab.h).
#include <algorithm>
#include <new>

#include "memory_lab.h"

namespace lab04 {

LabCachingAllocator::~LabCachingAllocator() {
  for (auto& [ptr, block] : live_) delete block;
  for (Block* block : free_) delete block;
  for (auto& [start, bytes] : segments_) ::operator delete(start, std::align_val_t(kRound));
}

std::size_t LabCachingAllocator::block_size(void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  GTL_CHECK(it != live_.end(), name() << ": block_size of a pointer it did not allocate");
  return it->second->size;
}

// SOLUTION(lab04) step 2: rounding, best fit, splitting, coalescing, release-all, the limit.
std::size_t LabCachingAllocator::round_size(std::size_t bytes) {
  return std::max<std::size_t>(1, (bytes + kRound - 1) / kRound) * kRound;
}

void* LabCachingAllocator::allocate(std::size_t bytes, const gtl::Stream&) {
  if (bytes == 0) return nullptr;
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  Block probe;
  probe.size = size;
  auto fit = free_.lower_bound(&probe);  // smallest block >= size, lowest address among equals
  Block* block = nullptr;
  if (fit != free_.end()) {
    block = *fit;
    free_.erase(fit);
  } else {
    const std::size_t segment = std::max(size, kSegment);
    if (would_exceed_limit(static_cast<int64_t>(segment))) {
      release_free_segments();  // the cache gives back what it holds before failing
      if (would_exceed_limit(static_cast<int64_t>(segment))) {
        throw_oom(static_cast<int64_t>(bytes), "the lab caching allocator");
      }
    }
    char* start = static_cast<char*>(::operator new(segment, std::align_val_t(kRound)));
    segments_[start] = segment;
    note_system_alloc(static_cast<int64_t>(segment));
    block = new Block{start, segment, 0, true, nullptr, nullptr, start};
  }
  if (block->size - size >= kRound) {  // split: the rest stays free
    Block* rest = new Block{block->ptr + size, block->size - size, 0, true, block,
                            block->next,       block->segment};
    if (block->next) block->next->prev = rest;
    block->next = rest;
    block->size = size;
    free_.insert(rest);
  }
  block->free = false;
  block->requested = bytes;
  live_[block->ptr] = block;
  note_alloc(static_cast<int64_t>(bytes));
  return block->ptr;
}
void LabCachingAllocator::deallocate(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(ptr);
  GTL_CHECK(it != live_.end(), name() << ": deallocate of a pointer it did not allocate");
  Block* block = it->second;
  live_.erase(it);
  note_free(static_cast<int64_t>(block->requested));
  block->free = true;
  block->requested = 0;
  if (Block* next = block->next; next && next->free) {
    free_.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next) next->next->prev = block;
    delete next;
  }
  if (Block* prev = block->prev; prev && prev->free) {
    free_.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next) block->next->prev = prev;
    delete block;
    block = prev;
  }
  free_.insert(block);
}
void LabCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_free_segments();
}

void LabCachingAllocator::release_free_segments() {
  for (auto it = free_.begin(); it != free_.end();) {
    Block* block = *it;
    if (block->prev || block->next) {  // part of a segment still in use
      ++it;
      continue;
    }
    it = free_.erase(it);
    ::operator delete(block->ptr, std::align_val_t(kRound));
    note_system_free(static_cast<int64_t>(block->size));
    segments_.erase(block->ptr);
    delete block;
  }
}

LabCachingAllocator::CacheInfo LabCachingAllocator::cache_info() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CacheInfo info;
  info.segments = static_cast<int64_t>(segments_.size());
  for (const Block* block : free_) {
    info.free_blocks += 1;
    info.free_bytes += static_cast<int64_t>(block->size);
    info.largest_free_block = std::max(info.largest_free_block, static_cast<int64_t>(block->size));
  }
  return info;
}
// END SOLUTION(lab04)

}  // namespace lab04
