// Lab 04, TODO 2: a caching allocator for host memory (the rules are in memory_lab.h).
#include "memory_lab.h"

// TODO(lab04) step 2: rounding, best fit, splitting, coalescing, release-all, the limit.
#include <algorithm>
#include <new>

namespace lab04 {

// Your bookkeeping. The calls below must each cost about O(log n) in the blocks the cache holds
// (a training step makes thousands of them): decide what finds the smallest free block that fits
// (lowest address among equals), what lets a freed block find its neighbours in its segment, and
// how release_free_segments recognises a fully free segment. About 20 lines.
struct LabCachingAllocator::State {};

LabCachingAllocator::LabCachingAllocator()
    : gtl::Allocator(gtl::Device::cpu()), state_(std::make_unique<State>()) {}

LabCachingAllocator::~LabCachingAllocator() {
  // Give back every segment, and whatever State allocated. About 5 lines.
}

std::size_t LabCachingAllocator::block_size(void* ptr) const {
  // A pointer this allocator did not hand out is an error. About 4 lines.
  (void)ptr;
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::block_size is not implemented");
}

std::size_t LabCachingAllocator::round_size(std::size_t bytes) {
  // The header's first rule. About 1 line.
  (void)bytes;
  throw gtl::Error("TODO(lab04) step 2: LabCachingAllocator::round_size is not implemented");
}

void* LabCachingAllocator::allocate(std::size_t bytes, const gtl::Stream& stream) {
  // nullptr for 0 bytes. The rules are the header's; the tools: ::operator new with
  // std::align_val_t(kRound) for a segment, would_exceed_limit and throw_oom for the limit, the
  // note_* statistics. What in State must stay consistent when a block changes size? About 35
  // lines.
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

}  // namespace lab04
// END TODO(lab04)
