// Lab 04, TODO 2: the caching allocator's rules, each checked on exact bytes and pointers.
#include <gtest/gtest.h>

#include <map>

#include "gtl_judge_output.h"
#include "lab04_allocator_model.h"
#include "lab04_student_call.h"
#include "memory_lab.h"

namespace {

using lab04::LabCachingAllocator;
constexpr int64_t kSegment = LabCachingAllocator::kSegment;

TEST(CachingAllocator, RoundsEveryRequestTo512Bytes) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  EXPECT_EQ(LabCachingAllocator::round_size(1), 512u) << "TODO 2: a 1-byte request takes 512";
  EXPECT_EQ(LabCachingAllocator::round_size(512), 512u) << "TODO 2: 512 is already rounded";
  EXPECT_EQ(LabCachingAllocator::round_size(513), 1024u) << "TODO 2: round UP to 512";
  LabCachingAllocator a;
  void* p = a.allocate(1);
  EXPECT_EQ(a.block_size(p), 512u) << "TODO 2: the block set aside is the rounded size";
  const gtl::MemoryStats s = a.stats();
  gtl::judge::Outputs("CachingAllocator.RoundsEveryRequestTo512Bytes")  // for the judge
      .record_all(std::vector<int64_t>{int64_t(LabCachingAllocator::round_size(1)),
                                       int64_t(LabCachingAllocator::round_size(513)),
                                       int64_t(a.block_size(p)), s.allocated_bytes,
                                       s.reserved_bytes, s.num_system_allocs});
  EXPECT_EQ(s.allocated_bytes, 1) << "TODO 2: allocated counts the REQUESTED bytes";
  EXPECT_EQ(s.reserved_bytes, kSegment) << "TODO 2: a small request takes a 2 MiB segment";
  EXPECT_EQ(s.num_system_allocs, 1);
  a.deallocate(p);
}

TEST(CachingAllocator, SplitsASegmentAndReusesIt) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  LabCachingAllocator a;
  std::vector<void*> ps;
  for (int i = 0; i < 8; ++i) ps.push_back(a.allocate(1000));
  EXPECT_EQ(a.stats().num_system_allocs, 1)
      << "TODO 2: eight 1000-byte blocks are carved out of ONE 2 MiB segment (split the rest)";
  EXPECT_EQ(static_cast<char*>(ps[1]) - static_cast<char*>(ps[0]), 1024)
      << "TODO 2: the rest of a split block starts right after the rounded size";
  for (void* p : ps) a.deallocate(p);
  void* again = a.allocate(3000);
  gtl::judge::Outputs("CachingAllocator.SplitsASegmentAndReusesIt")  // for the judge
      .record_all(std::vector<int64_t>{static_cast<char*>(ps[1]) - static_cast<char*>(ps[0]),
                                       static_cast<char*>(again) - static_cast<char*>(ps[0]),
                                       a.stats().num_system_allocs});
  EXPECT_EQ(again, ps[0]) << "TODO 2: a freed segment is reused, from its start";
  EXPECT_EQ(a.stats().num_system_allocs, 1) << "TODO 2: reuse the cache, no new segment";
  a.deallocate(again);
}

TEST(CachingAllocator, ChoosesTheBestFitNotTheFirstFit) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  LabCachingAllocator a;
  // Free blocks of 4096 (lower address) and 1024 bytes, kept apart by live blocks.
  void* big = a.allocate(4096);
  void* sep1 = a.allocate(512);
  void* small = a.allocate(1024);
  void* sep2 = a.allocate(512);
  a.deallocate(big);
  a.deallocate(small);
  void* p = a.allocate(1000);
  gtl::judge::Outputs("CachingAllocator.ChoosesTheBestFitNotTheFirstFit")  // for the judge
      .record(static_cast<char*>(p) - static_cast<char*>(big));
  EXPECT_EQ(p, small) << "TODO 2: best fit takes the SMALLEST free block that fits (1024 at "
                      << small << "), not the first one (4096 at " << big << "); got " << p;
  a.deallocate(p);
  a.deallocate(sep1);
  a.deallocate(sep2);
}

TEST(CachingAllocator, CoalescesFreeNeighbours) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  LabCachingAllocator a;
  void* x = a.allocate(4096);
  void* y = a.allocate(4096);
  void* z = a.allocate(4096);
  a.deallocate(x);
  a.deallocate(z);
  a.deallocate(y);  // merges with both neighbours, and z with the segment's free tail
  const LabCachingAllocator::CacheInfo info = a.cache_info();
  EXPECT_EQ(info.free_blocks, 1) << "TODO 2: freeing the middle block merges it with BOTH free "
                                    "neighbours: the segment is one free block again";
  EXPECT_EQ(info.largest_free_block, kSegment) << "TODO 2: the whole segment is free";
  EXPECT_EQ(info.fragmentation(), 0.0) << "TODO 2: one free block: no fragmentation";
  void* whole = a.allocate(kSegment);
  gtl::judge::Outputs("CachingAllocator.CoalescesFreeNeighbours")  // for the judge
      .record_all(std::vector<int64_t>{info.free_blocks, info.largest_free_block,
                                       static_cast<char*>(whole) - static_cast<char*>(x)});
  EXPECT_EQ(whole, x) << "TODO 2: after coalescing, a 2 MiB request fits the old segment";
  EXPECT_EQ(a.stats().num_system_allocs, 1);
  a.deallocate(whole);
}

TEST(CachingAllocator, StatisticsFollowFreesAndEmptyCache) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  LabCachingAllocator a;
  void* p = a.allocate(3 << 20);  // larger than a segment: its own
  void* q = a.allocate(100);
  a.deallocate(q);
  gtl::MemoryStats s = a.stats();
  EXPECT_EQ(s.allocated_bytes, 3 << 20) << "TODO 2: a free subtracts the requested bytes";
  EXPECT_EQ(s.reserved_bytes, (3 << 20) + kSegment)
      << "TODO 2: a large request takes a segment of its rounded size; the cache keeps freed "
         "memory reserved";
  EXPECT_EQ(s.peak_allocated_bytes, (3 << 20) + 100);
  const LabCachingAllocator::CacheInfo mid = a.cache_info();
  EXPECT_EQ(mid.segments, 2);
  EXPECT_EQ(mid.free_bytes, kSegment) << "TODO 2: free bytes are the cached, unallocated ones";
  a.empty_cache();
  s = a.stats();
  EXPECT_EQ(s.reserved_bytes, 3 << 20)
      << "TODO 2: empty_cache returns the fully free segment, keeps the one in use";
  EXPECT_EQ(s.num_system_frees, 1);
  gtl::judge::Outputs recorded("CachingAllocator.StatisticsFollowFreesAndEmptyCache");
  recorded.record_all(
      std::vector<int64_t>{mid.segments, mid.free_bytes, s.reserved_bytes, s.num_system_frees});
  a.deallocate(p);
  a.empty_cache();
  s = a.stats();
  recorded.record_all(std::vector<int64_t>{s.allocated_bytes, s.reserved_bytes});
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, 0) << "TODO 2: everything free: nothing stays reserved";
  EXPECT_EQ(a.cache_info().segments, 0);
}

TEST(CachingAllocator, FragmentationIsMeasured) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  LabCachingAllocator a;
  std::vector<void*> ps;
  for (int i = 0; i < 4; ++i) ps.push_back(a.allocate(1 << 19));  // 4 x 512 KiB: one segment
  a.deallocate(ps[0]);
  a.deallocate(ps[2]);
  const LabCachingAllocator::CacheInfo info = a.cache_info();
  gtl::judge::Outputs("CachingAllocator.FragmentationIsMeasured")  // for the judge
      .record_all(std::vector<double>{double(info.free_blocks), double(info.free_bytes),
                                      info.fragmentation()});
  EXPECT_EQ(info.free_blocks, 2);
  EXPECT_EQ(info.free_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(info.fragmentation(), 0.5)
      << "TODO 2: two free 512 KiB holes: a 1 MiB request does not fit although 1 MiB is free";
  a.deallocate(ps[1]);
  a.deallocate(ps[3]);
}

TEST(CachingAllocator, OutOfMemoryReleasesTheCacheAndChangesNothing) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  auto a = std::make_shared<LabCachingAllocator>();
  a->set_memory_limit(3 * kSegment);
  void* keep = a->allocate(1000);
  a->deallocate(a->allocate(3 << 20));  // a cached 3 MiB segment, free
  EXPECT_THROW(a->allocate(5 << 20), gtl::OutOfMemoryError)
      << "TODO 2: 2 MiB in use + 5 MiB would exceed the 6 MiB limit, even with the cache given "
         "back";
  gtl::MemoryStats s = a->stats();
  EXPECT_EQ(s.num_ooms, 1) << "TODO 2: throw through throw_oom (it counts the OOM)";
  EXPECT_EQ(s.allocated_bytes, 1000) << "TODO 2: a failed request allocates nothing";
  EXPECT_EQ(s.reserved_bytes, kSegment)
      << "TODO 2: before failing, the free cached segment (3 MiB) is given back";
  void* fits = a->allocate(4 << 20);  // 2 + 4 <= 6 MiB
  gtl::judge::Outputs("CachingAllocator.OutOfMemoryReleasesTheCacheAndChangesNothing")
      .record_all(std::vector<int64_t>{s.num_ooms, s.allocated_bytes, s.reserved_bytes,
                                       a->stats().reserved_bytes});  // for the judge
  EXPECT_EQ(a->stats().reserved_bytes, 3 * kSegment);
  a->deallocate(fits);
  a->deallocate(keep);
}

TEST(CachingAllocator, SteadyStateTrainingMakesNoSystemAllocation) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  auto a = std::make_shared<LabCachingAllocator>();
  const gtl::AllocatorScope scope(a);
  lab04::ModelConfig config;
  auto model = gtl::nn::make_model(config);
  gtl::optim::AdamW adamw(model->parameters());
  const lab04::LabBatch b = lab04::make_batch(config, 64);
  lab04::forward_backward(*model, b.images, b.labels);
  adamw.step();
  const gtl::MemoryStats warm = a->stats();
  for (int step = 0; step < 3; ++step) {
    lab04::forward_backward(*model, b.images, b.labels);
    adamw.step();
  }
  const gtl::MemoryStats s = a->stats();
  gtl::judge::Outputs("CachingAllocator.SteadyStateTrainingMakesNoSystemAllocation")
      .record_all(std::vector<int64_t>{s.num_system_allocs - warm.num_system_allocs,
                                       s.num_allocs - warm.num_allocs, s.allocated_bytes});
  EXPECT_EQ(s.num_system_allocs, warm.num_system_allocs)
      << "TODO 2: after one warm-up step, training steps are served from the cache";
  EXPECT_GT(s.num_allocs - warm.num_allocs, 0) << "the steps ran through your allocator";
  EXPECT_EQ(s.allocated_bytes, warm.allocated_bytes) << "TODO 2: every step frees what it took";
}

// Replays a seeded trace of calls on your allocator and compares, after every call, where the
// block landed and the statistics and cache with the rules' model (lab04_allocator_model.h).
// Stops at the first call that differs, and says which.
void expect_trace_follows_the_rules(const std::string& test, int calls, int64_t limit) {
  const auto trace = lab04_model::seeded_trace(test, calls, limit);
  auto a = std::make_shared<LabCachingAllocator>();
  if (limit > 0) a->set_memory_limit(limit);
  gtl::judge::Outputs recorded(test);
  std::map<int64_t, std::pair<char*, int64_t>> segments;  // model id -> (start, bytes)
  std::vector<void*> live;
  int64_t next_segment = 0;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const lab04_model::Expected& want = trace[i];
    lab04_model::Place got;
    if (want.call.kind == lab04_model::Call::Allocate) {
      try {
        char* p = static_cast<char*>(a->allocate(static_cast<std::size_t>(want.call.bytes)));
        live.push_back(p);
        // Only segments the rules still hold after this call: a segment released to make room
        // under the limit can come back from the system at the same address as a new one.
        for (const auto& [id, segment] : segments) {
          const bool held = std::count(want.segments.begin(), want.segments.end(), id) > 0;
          if (held && p >= segment.first && p < segment.first + segment.second) {
            got = {id, p - segment.first, false};
          }
        }
        if (got.segment < 0) {  // in no segment held so far: a new one
          const int64_t bytes = std::max<int64_t>(
              int64_t(LabCachingAllocator::round_size(want.call.bytes)), kSegment);
          got = {next_segment, 0, true};
          segments[next_segment] = {p, bytes};
        }
      } catch (const gtl::OutOfMemoryError&) {
      }
    } else if (want.call.kind == lab04_model::Call::Free) {
      a->deallocate(live[static_cast<std::size_t>(want.call.victim)]);
      live.erase(live.begin() + want.call.victim);
    } else {
      a->empty_cache();
    }
    if (want.place.new_segment) ++next_segment;
    for (auto it = segments.begin(); it != segments.end();) {  // forget the released ones
      const bool held = std::count(want.segments.begin(), want.segments.end(), it->first) > 0;
      it = held ? std::next(it) : segments.erase(it);
    }
    const LabCachingAllocator::CacheInfo info = a->cache_info();
    const gtl::MemoryStats s = a->stats();
    lab04_model::State state;
    state.allocated = s.allocated_bytes;
    state.peak_allocated = s.peak_allocated_bytes;
    state.reserved = s.reserved_bytes;
    state.system_allocs = s.num_system_allocs;
    state.system_frees = s.num_system_frees;
    state.ooms = s.num_ooms;
    state.segments = info.segments;
    state.free_blocks = info.free_blocks;
    state.free_bytes = info.free_bytes;
    state.largest_free_block = info.largest_free_block;
    recorded.record_all(lab04_model::record_of(got, state));
    std::ostringstream why;
    if (got.segment != want.place.segment || got.offset != want.place.offset) {
      auto where = [](const lab04_model::Place& p) {
        if (p.segment < 0) return std::string("OutOfMemoryError");
        return (p.new_segment ? "a new segment ("
                              : "offset " + std::to_string(p.offset) + " of the segment taken ") +
               std::to_string(p.segment) + (p.new_segment ? "-th)" : "-th");
      };
      why << " the block went to " << where(got) << ", the rules put it at " << where(want.place)
          << " (best fit, splitting, new segments, the limit);";
    }
    const std::vector<int64_t> w = want.state.values(), g = state.values();
    const std::vector<std::string> names = lab04_model::State::names();
    for (std::size_t k = 0; k < w.size(); ++k) {
      if (w[k] != g[k]) why << " " << names[k] << " " << g[k] << ", expected " << w[k] << ";";
    }
    if (!why.str().empty()) {
      ADD_FAILURE() << "TODO 2: call " << i + 1 << " of " << trace.size() << ", "
                    << want.call.describe() << ":" << why.str()
                    << " (the calls before it matched the rules: revisit the rule this call "
                       "exercises, among rounding, best fit, splitting, coalescing, a new "
                       "segment's size and releasing the cache under a limit; "
                    << gtl::test_seed::describe() << ")";
      return;
    }
  }
  for (void* p : live) a->deallocate(p);
}

TEST(CachingAllocator, FollowsTheRulesOnASeededTrace) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  expect_trace_follows_the_rules("CachingAllocator.FollowsTheRulesOnASeededTrace",
                                 lab04_model::kTraceCalls, 0);
}

TEST(CachingAllocator, OutOfMemoryOnASeededTraceUnderALimit) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  expect_trace_follows_the_rules("CachingAllocator.OutOfMemoryOnASeededTraceUnderALimit",
                                 lab04_model::kTraceCalls, lab04_model::kTraceLimit);
}

}  // namespace
