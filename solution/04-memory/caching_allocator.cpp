// Lab 04, TODO 2: a caching allocator for host memory (the rules are in memory_lab.h).
#include "memory_lab.h"

// SOLUTION(lab04) step 2: rounding, best fit, splitting, coalescing, release-all, the limit.
#include <algorithm>
#include <map>
#include <new>
#include <set>
#include <unordered_map>

namespace lab04 {

// One block of a segment: the blocks of a segment tile it, linked in address order, so a freed
// block finds its neighbours in O(1); the free ones also sit in a set ordered by (size, address),
// so the best fit is one lower_bound.
struct Block {
  char* ptr = nullptr;
  std::size_t size = 0;       // rounded bytes
  std::size_t requested = 0;  // bytes asked for (0 while free)
  bool free = true;
  Block* prev = nullptr;  // neighbours in the same segment
  Block* next = nullptr;
  char* segment = nullptr;  // start of its segment
};
struct BySizeThenAddress {
  bool operator()(const Block* a, const Block* b) const {
    return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
  }
};

struct LabCachingAllocator::State {
  std::set<Block*, BySizeThenAddress> free;
  std::unordered_map<void*, Block*> live;  // allocated blocks by pointer
  std::map<char*, std::size_t> segments;   // segment start -> bytes
};

LabCachingAllocator::LabCachingAllocator()
    : gtl::Allocator(gtl::Device::cpu()), state_(std::make_unique<State>()) {}

LabCachingAllocator::~LabCachingAllocator() {
  for (auto& [ptr, block] : state_->live) delete block;
  for (Block* block : state_->free) delete block;
  for (auto& [start, bytes] : state_->segments) {
    ::operator delete(start, std::align_val_t(kRound));
  }
}

std::size_t LabCachingAllocator::block_size(void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = state_->live.find(ptr);
  GTL_CHECK(it != state_->live.end(), name() << ": block_size of a pointer it did not allocate");
  return it->second->size;
}

std::size_t LabCachingAllocator::round_size(std::size_t bytes) {
  return std::max<std::size_t>(1, (bytes + kRound - 1) / kRound) * kRound;
}

void* LabCachingAllocator::allocate(std::size_t bytes, const gtl::Stream&) {
  if (bytes == 0) return nullptr;
  const std::size_t size = round_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  Block probe;
  probe.size = size;
  auto fit =
      state_->free.lower_bound(&probe);  // smallest block >= size, lowest address among equals
  Block* block = nullptr;
  if (fit != state_->free.end()) {
    block = *fit;
    state_->free.erase(fit);
  } else {
    const std::size_t segment = std::max(size, kSegment);
    if (would_exceed_limit(static_cast<int64_t>(segment))) {
      release_free_segments();  // the cache gives back what it holds before failing
      if (would_exceed_limit(static_cast<int64_t>(segment))) {
        throw_oom(static_cast<int64_t>(bytes), "the lab caching allocator");
      }
    }
    char* start = static_cast<char*>(::operator new(segment, std::align_val_t(kRound)));
    state_->segments[start] = segment;
    note_system_alloc(static_cast<int64_t>(segment));
    block = new Block{start, segment, 0, true, nullptr, nullptr, start};
  }
  if (block->size - size >= kRound) {  // split: the rest stays free
    Block* rest = new Block{block->ptr + size, block->size - size, 0, true, block,
                            block->next,       block->segment};
    if (block->next) block->next->prev = rest;
    block->next = rest;
    block->size = size;
    state_->free.insert(rest);
  }
  block->free = false;
  block->requested = bytes;
  state_->live[block->ptr] = block;
  note_alloc(static_cast<int64_t>(bytes));
  return block->ptr;
}
void LabCachingAllocator::deallocate(void* ptr) {
  if (!ptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = state_->live.find(ptr);
  GTL_CHECK(it != state_->live.end(), name() << ": deallocate of a pointer it did not allocate");
  Block* block = it->second;
  state_->live.erase(it);
  note_free(static_cast<int64_t>(block->requested));
  block->free = true;
  block->requested = 0;
  if (Block* next = block->next; next && next->free) {
    state_->free.erase(next);
    block->size += next->size;
    block->next = next->next;
    if (next->next) next->next->prev = block;
    delete next;
  }
  if (Block* prev = block->prev; prev && prev->free) {
    state_->free.erase(prev);
    prev->size += block->size;
    prev->next = block->next;
    if (block->next) block->next->prev = prev;
    delete block;
    block = prev;
  }
  state_->free.insert(block);
}
void LabCachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_free_segments();
}

void LabCachingAllocator::release_free_segments() {
  for (auto it = state_->free.begin(); it != state_->free.end();) {
    Block* block = *it;
    if (block->prev || block->next) {  // part of a segment still in use
      ++it;
      continue;
    }
    it = state_->free.erase(it);
    ::operator delete(block->ptr, std::align_val_t(kRound));
    note_system_free(static_cast<int64_t>(block->size));
    state_->segments.erase(block->ptr);
    delete block;
  }
}

LabCachingAllocator::CacheInfo LabCachingAllocator::cache_info() const {
  std::lock_guard<std::mutex> lock(mutex_);
  CacheInfo info;
  info.segments = static_cast<int64_t>(state_->segments.size());
  for (const Block* block : state_->free) {
    info.free_blocks += 1;
    info.free_bytes += static_cast<int64_t>(block->size);
    info.largest_free_block = std::max(info.largest_free_block, static_cast<int64_t>(block->size));
  }
  return info;
}

}  // namespace lab04
// END SOLUTION(lab04)
