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

// TODO(lab04) step 2: rounding, best fit, splitting, coalescing, release-all, the limit.
std::size_t LabCachingAllocator::round_size(std::size_t bytes) {
  // The header's first rule. About 1 line.
  (void)bytes;
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::round_size is not implemented");
}

void* LabCachingAllocator::allocate(std::size_t bytes, const gtl::Stream& stream) {
  // nullptr for 0 bytes. The rules are the header's; the tools: ::operator new with
  // std::align_val_t(kRound) for a segment, would_exceed_limit and throw_oom for the limit, the
  // note_* statistics. How do you find the best fit without scanning every free block, and what
  // must stay consistent when a block changes size? About 35 lines.
  (void)bytes;
  (void)stream;
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::allocate is not implemented");
}

void LabCachingAllocator::deallocate(void* ptr) {
  // nullptr: nothing; a pointer this allocator did not hand out is an error. Merge with the free
  // neighbours of the same segment. About 25 lines.
  (void)ptr;
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::deallocate is not implemented");
}

void LabCachingAllocator::empty_cache() {
  // About 2 lines.
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::empty_cache is not implemented");
}

void LabCachingAllocator::release_free_segments() {
  // Give every fully free segment back to the system (::operator delete with the alignment it
  // was allocated with). How do you recognise one without scanning its memory? About 12 lines.
  throw gtl::Error("TODO(lab04) step 2: release_free_segments is not implemented");
}

LabCachingAllocator::CacheInfo LabCachingAllocator::cache_info() const {
  // The header's CacheInfo. About 8 lines.
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::cache_info is not implemented");
}
// END TODO(lab04)

}  // namespace lab04
