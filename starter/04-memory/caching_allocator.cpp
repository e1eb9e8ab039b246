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
  // Round up to a multiple of kRound (at least kRound). About 1 line.
  (void)bytes;
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::round_size is not implemented");
}

void* LabCachingAllocator::allocate(std::size_t bytes, const gtl::Stream& stream) {
  // nullptr for 0 bytes. Under mutex_: take the BEST fit from free_ (lower_bound on a probe
  // Block of the rounded size); none fits -> a new segment of max(rounded, kSegment) bytes
  // (::operator new with std::align_val_t(kRound), note_system_alloc; under the limit
  // (would_exceed_limit) call release_free_segments() first, then throw_oom if still too big).
  // Split when the rest is >= kRound (link the rest as the block's next neighbour, into
  // free_). Record the block in live_, note_alloc(bytes) the REQUESTED size. About 35 lines.
  (void)bytes;
  (void)stream;
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::allocate is not implemented");
}

void LabCachingAllocator::deallocate(void* ptr) {
  // nullptr: nothing. Under mutex_: find the block in live_ (GTL_CHECK it is there),
  // note_free(requested), then merge it with its next and prev neighbours when they are free
  // (take them out of free_ first: the set is ordered by size), and put the result in free_.
  // About 25 lines.
  (void)ptr;
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::deallocate is not implemented");
}

void LabCachingAllocator::empty_cache() {
  // Under mutex_, release_free_segments(). About 2 lines.
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::empty_cache is not implemented");
}

void LabCachingAllocator::release_free_segments() {
  // A free block with no neighbours IS a whole segment: give it back to the system
  // (::operator delete with the same alignment, note_system_free), forget it in free_ and
  // segments_. About 12 lines.
  throw gtl::Error("TODO(lab04) step 2: release_free_segments is not implemented");
}

LabCachingAllocator::CacheInfo LabCachingAllocator::cache_info() const {
  // Count segments, free blocks, their bytes and the largest of them. About 8 lines.
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::cache_info is not implemented");
}
// END TODO(lab04)

}  // namespace lab04
