// The caching allocator's logic, all on the CPU with the host backend: rounding, small and large
// pools, splitting and merging blocks, reuse without system allocations, stream-aware reuse with
// events the test completes by hand, empty_cache, and out-of-memory with and without a retry that
// saves the day. The CUDA backend adds only cudaMalloc/cudaFree/events
// (cuda_caching_allocator_test).
#include "gtl/memory/caching_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

namespace gtl {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * 1024;
constexpr int64_t iMiB = static_cast<int64_t>(MiB);

// A caching allocator over host memory; keep `source` to complete its stream events by hand.
struct Cache {
  explicit Cache(HostSegmentSource::Options options = {})
      : source(std::make_shared<HostSegmentSource>(options)),
        alloc(std::make_shared<CachingAllocator>(Device::cpu(), source)) {}
  std::shared_ptr<HostSegmentSource> source;
  std::shared_ptr<CachingAllocator> alloc;
};

// Streams are only names to the allocator: made-up handles stand for a GPU's streams.
cudaStream_t fake_stream(std::uintptr_t id) {
  return reinterpret_cast<cudaStream_t>(id);
}
const cudaStream_t kMain = nullptr;  // the default stream
const cudaStream_t kSide = fake_stream(0x51de);

char* bytes(void* p) {
  return static_cast<char*>(p);
}

TEST(CachingAllocator, RoundsSizesAndPicksSegments) {
  EXPECT_EQ(CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(CachingAllocator::round_size(512), 512u);
  EXPECT_EQ(CachingAllocator::round_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::segment_size_for(512), 2 * MiB) << "small requests: 2 MiB segments";
  EXPECT_EQ(CachingAllocator::segment_size_for(MiB), 2 * MiB) << "1 MiB is still small";
  EXPECT_EQ(CachingAllocator::segment_size_for(MiB + 512), 20 * MiB) << "1-10 MiB: 20 MiB segments";
  EXPECT_EQ(CachingAllocator::segment_size_for(10 * MiB - 512), 20 * MiB);
  EXPECT_EQ(CachingAllocator::segment_size_for(10 * MiB), 10 * MiB) << "large: own segment";
  EXPECT_EQ(CachingAllocator::segment_size_for(11 * MiB + 512), 12 * MiB)
      << "large segments are rounded up to 2 MiB";

  Cache c;
  void* a = c.alloc->allocate(1);
  EXPECT_EQ(c.alloc->block_size(a), 512u) << "1 byte takes a 512-byte block";
  MemoryStats s = c.alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 1) << "allocated counts the requested bytes, not the rounded ones";
  EXPECT_EQ(s.reserved_bytes, iMiB * 2) << "reserved counts the 2 MiB segment";
  void* b = c.alloc->allocate(3 * MiB);
  void* d = c.alloc->allocate(30 * MiB + 1);
  s = c.alloc->stats();
  EXPECT_EQ(s.reserved_bytes, iMiB * (2 + 20 + 32)) << "2 MiB + 20 MiB + (30 MiB + 1 -> 32 MiB)";
  EXPECT_EQ(s.num_system_allocs, 3);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 512, 0u) << "blocks are 512-aligned";
  for (void* p : {a, b, d}) c.alloc->deallocate(p);
  EXPECT_EQ(c.alloc->stats().allocated_bytes, 0);
  EXPECT_EQ(c.alloc->stats().reserved_bytes, iMiB * 54) << "freed blocks stay cached";
}

TEST(CachingAllocator, SmallAndLargePoolsDoNotMix) {
  Cache c;
  c.alloc->deallocate(c.alloc->allocate(3 * MiB));  // a free 20 MiB segment in the large pool
  void* small = c.alloc->allocate(KiB);
  EXPECT_EQ(c.alloc->stats().num_system_allocs, 2)
      << "a 1 KiB request comes from a 2 MiB small-pool segment, never from the large pool";
  c.alloc->deallocate(small);
  void* medium = c.alloc->allocate(3 * MiB / 2);
  EXPECT_EQ(c.alloc->stats().num_system_allocs, 2)
      << "a 1.5 MiB request reuses the cached 20 MiB segment of the large pool";
  c.alloc->deallocate(medium);
}

TEST(CachingAllocator, SplitKeepsTheRestForLaterRequests) {
  Cache c;
  void* a = c.alloc->allocate(1000);  // block of 1024
  void* b = c.alloc->allocate(4096);
  EXPECT_EQ(bytes(b), bytes(a) + 1024) << "b is split off the same segment, right after a";
  EXPECT_EQ(c.alloc->stats().num_system_allocs, 1);
  auto info = c.alloc->cache_info();
  EXPECT_EQ(info.free_blocks, 1);
  EXPECT_EQ(info.cached_bytes, iMiB * 2 - 1024 - 4096) << "the rest of the segment is cached";

  // Large pool: a rest of 1 MiB or less is not worth keeping (no large request fits it).
  void* big = c.alloc->allocate(19 * MiB + MiB / 2);
  EXPECT_EQ(c.alloc->block_size(big), 20 * MiB) << "the 0.5 MiB rest stays with the block";
  void* two = c.alloc->allocate(2 * MiB);
  EXPECT_EQ(c.alloc->block_size(two), 2 * MiB) << "an 18 MiB rest is split off";
  info = c.alloc->cache_info();
  EXPECT_EQ(info.largest_free_block, iMiB * 18);
  for (void* p : {a, b, big, two}) c.alloc->deallocate(p);
}

// a, b, c of 256 KiB each, then the segment's free tail.
struct ThreeBlocks {
  explicit ThreeBlocks(CachingAllocator& alloc)
      : a(alloc.allocate(256 * KiB)), b(alloc.allocate(256 * KiB)), c(alloc.allocate(256 * KiB)) {}
  void* a;
  void* b;
  void* c;
};

TEST(CachingAllocator, FreedNeighboursMergeInAnyOrder) {
  std::array<int, 3> order = {0, 1, 2};
  do {
    Cache cache;
    ThreeBlocks t(*cache.alloc);
    const std::array<void*, 3> blocks = {t.a, t.b, t.c};
    for (int i : order) cache.alloc->deallocate(blocks[i]);
    const auto info = cache.alloc->cache_info();
    EXPECT_EQ(info.free_blocks, 1) << "freed in order " << order[0] << order[1] << order[2]
                                   << ": neighbours should merge back into one block";
    EXPECT_EQ(info.largest_free_block, iMiB * 2) << "the whole segment is one free block again";
    void* whole = cache.alloc->allocate(MiB);
    EXPECT_EQ(whole, t.a) << "a 1 MiB request fits the merged block at the segment's start";
    EXPECT_EQ(cache.alloc->stats().num_system_allocs, 1) << "without a new segment";
    cache.alloc->deallocate(whole);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(CachingAllocator, MergedHoleServesABiggerRequest) {
  for (bool b_first : {true, false}) {
    Cache cache;
    ThreeBlocks t(*cache.alloc);
    cache.alloc->deallocate(b_first ? t.b : t.a);
    cache.alloc->deallocate(b_first ? t.a : t.b);
    void* ab = cache.alloc->allocate(512 * KiB);
    EXPECT_EQ(ab, t.a) << "a and b (freed, " << (b_first ? "b first" : "a first")
                       << ") merge into a 512 KiB hole; best fit picks it over the big tail";
    EXPECT_EQ(cache.alloc->stats().num_system_allocs, 1);
    cache.alloc->deallocate(ab);
    cache.alloc->deallocate(t.c);
  }
}

TEST(CachingAllocator, AHoleTooSmallIsFragmentation) {
  Cache cache;
  ThreeBlocks t(*cache.alloc);
  cache.alloc->deallocate(t.b);  // a 256 KiB hole between two live blocks
  void* p = cache.alloc->allocate(512 * KiB);
  EXPECT_EQ(bytes(p), bytes(t.c) + 256 * KiB) << "512 KiB does not fit b's hole: it goes after c";
  const auto info = cache.alloc->cache_info();
  EXPECT_EQ(info.free_blocks, 2) << "b's hole and the tail stay apart: a and c hold them apart";
  for (void* q : {t.a, t.c, p}) cache.alloc->deallocate(q);
  EXPECT_EQ(cache.alloc->cache_info().free_blocks, 1);
}

TEST(CachingAllocator, SteadyStateLoopMakesNoSystemAllocations) {
  Cache c;
  const std::vector<std::size_t> sizes = {4 * KiB, 300 * KiB, 1000, 5 * MiB, 64 * MiB, 12};
  auto step = [&] {
    std::vector<void*> live;
    for (std::size_t n : sizes) live.push_back(c.alloc->allocate(n));
    for (void* p : live) c.alloc->deallocate(p);
  };
  step();  // warm-up fills the cache
  const MemoryStats warm = c.alloc->stats();
  for (int i = 0; i < 100; ++i) step();
  const MemoryStats s = c.alloc->stats();
  EXPECT_EQ(s.num_system_allocs, warm.num_system_allocs)
      << "after one warm-up step every request is served from the cache";
  EXPECT_EQ(s.reserved_bytes, warm.reserved_bytes);
  EXPECT_EQ(s.num_allocs, warm.num_allocs + 100 * static_cast<int64_t>(sizes.size()));
  EXPECT_EQ(s.allocated_bytes, 0);
}

TEST(CachingAllocator, BlockUsedOnAnotherStreamWaitsForItsEvent) {
  Cache c({.manual_events = true});
  void* p = c.alloc->allocate_on(4096, kMain);
  c.alloc->record_stream_on(p, kSide);  // e.g. an all-reduce on a side stream reads p
  c.alloc->deallocate(p);
  EXPECT_EQ(c.source->pending_events(), 1) << "freeing records an event on the side stream";
  EXPECT_EQ(c.alloc->cache_info().blocks_awaiting_events, 1);
  EXPECT_EQ(c.alloc->stats().allocated_bytes, 0) << "to the tensor's owner the bytes are freed";

  void* q = c.alloc->allocate_on(4096, kMain);
  EXPECT_NE(q, p) << "the side stream may still be reading p: it must not be reused yet";

  c.source->complete_events(kSide);  // the side stream's work has finished
  void* r = c.alloc->allocate_on(4096, kMain);
  EXPECT_EQ(r, p) << "once the event completed, p is reusable (checked on the next allocation)";
  EXPECT_EQ(c.alloc->cache_info().blocks_awaiting_events, 0);
  EXPECT_EQ(c.alloc->stats().num_system_allocs, 1);
  c.alloc->deallocate(q);
  c.alloc->deallocate(r);
}

TEST(CachingAllocator, OwnStreamNeedsNoEventAndPoolsArePerStream) {
  Cache c({.manual_events = true});
  void* p = c.alloc->allocate_on(4096, kMain);
  c.alloc->record_stream_on(p, kMain);
  c.alloc->deallocate(p);
  EXPECT_EQ(c.source->pending_events(), 0) << "use on the block's own stream is already ordered";
  EXPECT_EQ(c.alloc->allocate_on(4096, kMain), p);

  void* s = c.alloc->allocate_on(4096, kSide);
  EXPECT_EQ(c.alloc->stats().num_system_allocs, 2)
      << "each stream has its own free blocks: the side stream gets a segment of its own";
  c.alloc->deallocate(s);
  c.alloc->deallocate(p);
}

TEST(CachingAllocator, EmptyCacheReleasesFreeSegmentsAfterPendingEvents) {
  Cache c({.manual_events = true});
  void* live = c.alloc->allocate(KiB);
  void* waiting = c.alloc->allocate(3 * MiB);
  c.alloc->record_stream_on(waiting, kSide);
  c.alloc->deallocate(waiting);
  c.alloc->deallocate(c.alloc->allocate(40 * MiB));
  EXPECT_EQ(c.alloc->stats().reserved_bytes, iMiB * (2 + 20 + 40));

  c.alloc->empty_cache();
  EXPECT_EQ(c.source->pending_events(), 0) << "empty_cache waits for pending events first";
  MemoryStats s = c.alloc->stats();
  EXPECT_EQ(s.reserved_bytes, iMiB * 2) << "only the segment holding a live block remains";
  EXPECT_EQ(s.num_system_frees, 2);
  EXPECT_EQ(c.source->segment_bytes(), iMiB * 2) << "the source got the memory back";

  c.alloc->deallocate(live);
  c.alloc->empty_cache();
  EXPECT_EQ(c.alloc->stats().reserved_bytes, 0);
  EXPECT_EQ(c.alloc->cache_info().segments, 0);
}

TEST(CachingAllocator, LimitIsMetByReleasingTheCacheAndRetrying) {
  Cache c;
  c.alloc->set_memory_limit(iMiB * 21);
  c.alloc->deallocate(c.alloc->allocate(KiB));  // a free 2 MiB small segment stays cached
  void* p = c.alloc->allocate(3 * MiB);         // needs 20 MiB: 2 + 20 > 21, so the cache must go
  MemoryStats s = c.alloc->stats();
  EXPECT_EQ(s.num_ooms, 0) << "releasing the cached 2 MiB segment makes room: no error";
  EXPECT_EQ(s.num_system_frees, 1);
  EXPECT_EQ(s.reserved_bytes, iMiB * 20);
  EXPECT_LE(s.peak_reserved_bytes, iMiB * 21) << "the limit bounds reserved bytes";
  c.alloc->deallocate(p);
}

TEST(CachingAllocator, RealOutOfMemoryThrowsAndRecovers) {
  Cache c;
  c.alloc->set_memory_limit(iMiB * 21);
  void* p = c.alloc->allocate(3 * MiB);  // a live block in a 20 MiB segment: nothing to release
  try {
    c.alloc->allocate(KiB);
    FAIL() << "expected OutOfMemoryError: 20 MiB reserved + a 2 MiB segment > 21 MiB limit";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    for (const char* part :
         {"Tried to allocate 1.00 KiB", "3.00 MiB allocated", "20.00 MiB reserved",
          "limit 21.00 MiB", "17.00 MiB reserved but unallocated (cached)", "memory limit"}) {
      EXPECT_NE(msg.find(part), std::string::npos) << "missing \"" << part << "\" in: " << msg;
    }
  }
  EXPECT_EQ(c.alloc->stats().num_ooms, 1);
  c.alloc->deallocate(p);
  void* q = c.alloc->allocate(KiB);  // the retry now releases the free 20 MiB segment
  EXPECT_EQ(c.alloc->stats().reserved_bytes, iMiB * 2) << "after freeing, allocation recovers";
  c.alloc->deallocate(q);
}

TEST(CachingAllocator, DeviceRefusalIsOutOfMemoryToo) {
  Cache c({.capacity_bytes = iMiB * 4});  // a "GPU" with 4 MiB
  void* small = c.alloc->allocate(KiB);
  try {
    c.alloc->allocate(3 * MiB);
    FAIL() << "expected OutOfMemoryError: the source cannot give a 20 MiB segment";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("refused a 20.00 MiB segment"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(c.alloc->stats().allocated_bytes, 1024) << "the failure changed nothing";
  c.alloc->deallocate(small);
}

TEST(CachingAllocator, ForeignPointerIsAnError) {
  Cache c;
  int x = 0;
  EXPECT_THROW(c.alloc->deallocate(&x), Error);
  EXPECT_THROW(c.alloc->record_stream_on(&x, kSide), Error);
}

// Host segments and manual events, with record_event and free_segment failing on demand, as
// they do on a GPU whose context an earlier error broke.
class FailingSource final : public SegmentSource {
 public:
  std::string name() const override { return "failing host"; }
  void* allocate_segment(std::size_t bytes) override { return host.allocate_segment(bytes); }
  void free_segment(void* ptr, std::size_t bytes) override {
    if (fail_free) throw Error("free_segment failed");
    host.free_segment(ptr, bytes);
  }
  Event record_event(cudaStream_t stream) override {
    if (events_left == 0) throw Error("record_event failed");
    --events_left;
    return host.record_event(stream);
  }
  bool event_completed(Event event) override { return host.event_completed(event); }
  void release_event(Event event) override { host.release_event(event); }
  void synchronize() override { host.synchronize(); }

  HostSegmentSource host{{.manual_events = true}};
  int events_left = -1;  // events record_event still grants; -1: no limit
  bool fail_free = false;
};

TEST(CachingAllocator, AFreeThatCannotRecordEveryEventKeepsTheBlockLive) {
  auto source = std::make_shared<FailingSource>();
  CachingAllocator alloc(Device::cpu(), source);
  const cudaStream_t kOther = fake_stream(2);
  void* p = alloc.allocate_on(4096, kMain);
  alloc.record_stream_on(p, kSide);
  alloc.record_stream_on(p, kOther);
  source->events_left = 1;  // the second stream's event fails
  EXPECT_THROW(alloc.deallocate(p), Error);
  EXPECT_EQ(alloc.stats().allocated_bytes, 4096) << "a failed free changes nothing";
  EXPECT_EQ(alloc.cache_info().blocks_awaiting_events, 0);
  EXPECT_EQ(source->host.pending_events(), 0) << "the event that was recorded is given back";

  source->events_left = -1;
  alloc.deallocate(p);  // still live, so it can be freed again
  source->host.complete_events(kSide);
  void* q = alloc.allocate_on(4096, kMain);
  EXPECT_NE(q, p) << "p waits for the second stream too, whose event the failed free missed";
  source->host.complete_events(kOther);
  void* r = alloc.allocate_on(4096, kMain);
  EXPECT_EQ(r, p);
  alloc.deallocate(q);
  alloc.deallocate(r);
}

TEST(CachingAllocator, AFailedSegmentReleaseKeepsTheSegmentCachedAndCounted) {
  auto source = std::make_shared<FailingSource>();
  CachingAllocator alloc(Device::cpu(), source);
  alloc.deallocate(alloc.allocate(KiB));
  source->fail_free = true;
  EXPECT_THROW(alloc.empty_cache(), Error);
  EXPECT_EQ(alloc.stats().reserved_bytes, iMiB * 2);
  EXPECT_EQ(alloc.cache_info().segments, 1);
  EXPECT_EQ(alloc.cache_info().cached_bytes, iMiB * 2) << "reserved = allocated + cached";

  source->fail_free = false;
  alloc.empty_cache();
  EXPECT_EQ(alloc.stats().reserved_bytes, 0);
  EXPECT_EQ(source->host.segment_bytes(), 0) << "the retry gave the segment back";
}

TEST(CachingAllocator, ThreadsSharingOneAllocatorKeepItConsistent) {
  Cache c;
  auto work = [&](int seed) {
    std::vector<void*> live;
    for (int i = 0; i < 2000; ++i) {
      const std::size_t n = 512u * static_cast<std::size_t>((i * 7 + seed * 13) % 700 + 1);
      live.push_back(c.alloc->allocate(n));
      if (live.size() > 8) {
        c.alloc->deallocate(live.front());
        live.erase(live.begin());
      }
    }
    for (void* p : live) c.alloc->deallocate(p);
  };
  std::vector<std::thread> ranks;
  for (int r = 0; r < 4; ++r) ranks.emplace_back(work, r);
  for (auto& t : ranks) t.join();
  const MemoryStats s = c.alloc->stats();
  EXPECT_EQ(s.num_allocs, 8000);
  EXPECT_EQ(s.num_frees, 8000);
  EXPECT_EQ(s.allocated_bytes, 0) << "every byte handed out came back";
  c.alloc->empty_cache();
  EXPECT_EQ(c.alloc->stats().reserved_bytes, 0)
      << "all blocks merged back into whole segments and were released";
}

TEST(CpuCachingAllocator, ShowsReservedVersusAllocatedThroughTensors) {
  auto alloc = make_cpu_caching_allocator();
  EXPECT_EQ(alloc->name(), "caching (host)");
  AllocatorScope scope(alloc);
  {
    const Tensor t = Tensor::empty({1000});
    EXPECT_EQ(alloc->stats().allocated_bytes, 4000);
    EXPECT_EQ(alloc->stats().reserved_bytes, iMiB * 2);
  }
  EXPECT_EQ(alloc->stats().allocated_bytes, 0);
  EXPECT_EQ(alloc->stats().reserved_bytes, iMiB * 2) << "the cache keeps the segment";
  const Tensor again = Tensor::zeros({1000});
  EXPECT_EQ(alloc->stats().num_system_allocs, 1) << "the next tensor reuses it";
  EXPECT_EQ(again.to_vector(), std::vector<float>(1000, 0.f));
  alloc->empty_cache();
  EXPECT_EQ(alloc->stats().reserved_bytes, iMiB * 2) << "a live tensor's segment stays";
}

}  // namespace
}  // namespace gtl
