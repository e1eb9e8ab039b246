// Lab 04, TODO 2: the caching allocator's rules, each checked on exact bytes and pointers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtl_judge_output.h"
#include "lab04_allocator_trace.h"
#include "lab04_student_call.h"
#include "memory_lab.h"

namespace {

using lab04::LabCachingAllocator;
constexpr int64_t kSegment = LabCachingAllocator::kSegment;
constexpr int64_t kRound = LabCachingAllocator::kRound;

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

// ---- the seeded trace (lab04_allocator_trace.h) -------------------------------------------------
// Your allocator as the test sees it from outside: the segments it took from the system (found
// from the pointers it returns and its statistics) and its live blocks. Free memory is what a
// segment holds between live blocks: once neighbours merge, each such stretch is one free block.
struct Observed {
  struct Segment {
    int64_t id = 0;  // in the order taken from the system
    uintptr_t start = 0;
    int64_t bytes = 0;
  };
  struct Live {
    uintptr_t start = 0;
    int64_t bytes = 0, requested = 0;
    void* ptr = nullptr;
  };
  struct Stretch {  // free bytes between live blocks of one segment
    int64_t segment = 0;
    uintptr_t start = 0;
    int64_t bytes = 0;
  };
  std::vector<Segment> segments;
  std::vector<Live> live;  // in allocation order
  int64_t next_id = 0;

  const Segment* holding(uintptr_t p) const {
    for (const Segment& s : segments)
      if (p >= s.start && p < s.start + uintptr_t(s.bytes)) return &s;
    return nullptr;
  }
  bool in_use(const Segment& s) const {
    for (const Live& l : live)
      if (l.start >= s.start && l.start < s.start + uintptr_t(s.bytes)) return true;
    return false;
  }
  std::vector<Stretch> free_stretches() const {
    std::vector<Stretch> out;
    for (const Segment& s : segments) {
      std::vector<std::pair<uintptr_t, int64_t>> used;
      for (const Live& l : live)
        if (holding(l.start) == &s) used.push_back({l.start, l.bytes});
      std::sort(used.begin(), used.end());
      uintptr_t at = s.start;
      for (const auto& [start, bytes] : used) {
        if (start > at) out.push_back({s.id, at, int64_t(start - at)});
        at = std::max(at, start + uintptr_t(bytes));
      }
      if (at < s.start + uintptr_t(s.bytes))
        out.push_back({s.id, at, int64_t(s.start + uintptr_t(s.bytes) - at)});
    }
    return out;
  }
  // The smallest stretch of at least `bytes`, the lowest address among equals; nullopt if none.
  std::optional<Stretch> smallest_fitting(int64_t bytes) const {
    std::optional<Stretch> best;
    for (const Stretch& f : free_stretches()) {
      if (f.bytes < bytes) continue;
      if (!best || f.bytes < best->bytes || (f.bytes == best->bytes && f.start < best->start))
        best = f;
    }
    return best;
  }
  // Whether the smallest stretches that fit `bytes` lie in two segments (the trace skips those).
  bool ambiguous(int64_t bytes) const {
    const std::optional<Stretch> best = smallest_fitting(bytes);
    if (!best) return false;
    for (const Stretch& f : free_stretches())
      if (f.bytes == best->bytes && f.segment != best->segment) return true;
    return false;
  }
  // Forgets the segments without a live block (what empty_cache() and the limit give back).
  std::pair<int64_t, int64_t> release_unused() {
    int64_t count = 0, bytes = 0;
    for (auto it = segments.begin(); it != segments.end();) {
      if (in_use(*it)) {
        ++it;
        continue;
      }
      ++count, bytes += it->bytes;
      it = segments.erase(it);
    }
    return {count, bytes};
  }
  std::pair<int64_t, int64_t> unused() const {
    int64_t count = 0, bytes = 0;
    for (const Segment& s : segments)
      if (!in_use(s)) ++count, bytes += s.bytes;
    return {count, bytes};
  }
};

lab04_trace::State state_of(const LabCachingAllocator& a) {
  const LabCachingAllocator::CacheInfo info = a.cache_info();
  const gtl::MemoryStats s = a.stats();
  lab04_trace::State state;
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
  return state;
}

std::string where(const Observed& seen, uintptr_t p) {
  const Observed::Segment* s = seen.holding(p);
  if (!s) return "outside every segment held";
  return "offset " + std::to_string(p - s->start) + " of segment " + std::to_string(s->id);
}

// The next call of the trace on `a`, checked against the rules' properties: "" when it follows
// them, else the first property it breaks, what the rules give and what came. Updates `seen` and
// `place` (where the block landed).
std::string replay_call(LabCachingAllocator& a, Observed& seen, const lab04_trace::Call& call,
                        int64_t limit, lab04_trace::Place& place) {
  using lab04_trace::Call;
  const lab04_trace::State before = state_of(a);
  lab04_trace::State want = before;  // the figures the rules give, property by property below
  std::ostringstream why;
  if (call.kind == Call::Allocate) {
    int64_t rounded = kRound;  // the smallest multiple of kRound that holds the request
    while (rounded < call.bytes) rounded += kRound;
    const std::optional<Observed::Stretch> fit = seen.smallest_fitting(rounded);
    const int64_t new_segment = std::max(rounded, kSegment);
    const auto [unused_count, unused_bytes] = seen.unused();
    const bool release = !fit && limit > 0 && before.reserved + new_segment > limit;
    const bool oom = release && before.reserved - unused_bytes + new_segment > limit;
    char* p = nullptr;
    try {
      p = static_cast<char*>(a.allocate(static_cast<std::size_t>(call.bytes)));
    } catch (const gtl::OutOfMemoryError&) {
      if (!oom) {
        why << "threw OutOfMemoryError, but "
            << (fit ? "a free block of " + std::to_string(fit->bytes) + " bytes fits"
                    : "a new segment of " + std::to_string(new_segment) + " bytes fits under " +
                          "the limit " + std::to_string(limit) + " once the " +
                          std::to_string(unused_bytes) + " bytes of fully free segments are " +
                          "given back")
            << " (the limit)";
        return why.str();
      }
    }
    if (oom && p) {
      why << "returned a block, but with " << before.reserved << " bytes reserved, of which only "
          << unused_bytes << " in fully free segments, a new segment of " << new_segment
          << " bytes exceeds the limit " << limit << ": it must throw OutOfMemoryError (the limit)";
      return why.str();
    }
    if (release) {
      want.system_frees += unused_count, want.reserved -= unused_bytes;
      seen.release_unused();
    }
    if (oom) {
      want.ooms += 1;
    } else if (!p) {
      why << "returned nullptr: a request of at least 1 byte gets a block or throws";
      return why.str();
    } else {
      const uintptr_t at = reinterpret_cast<uintptr_t>(p);
      if (int64_t(a.block_size(p)) != rounded) {
        why << "block_size " << a.block_size(p) << ", expected " << rounded
            << " (the request rounded UP to a multiple of " << kRound << ")";
        return why.str();
      }
      if (fit && at != fit->start) {
        why << "the block went to " << where(seen, at) << ", but the smallest free block that "
            << "fits (" << fit->bytes << " bytes; the lowest address among equals) starts at "
            << where(seen, fit->start) << " (best fit, a split keeps the block's start)";
        return why.str();
      }
      if (!fit && seen.holding(at)) {
        why << "the block went to " << where(seen, at) << ", but no free block of " << rounded
            << " bytes is left there: it needs a new segment from the system";
        return why.str();
      }
      if (!fit) {
        want.system_allocs += 1, want.reserved += new_segment;
        seen.segments.push_back({seen.next_id++, at, new_segment});
      }
      want.allocated += call.bytes;
      seen.live.push_back({at, rounded, call.bytes, p});
      const Observed::Segment* s = seen.holding(at);
      place = {s->id, int64_t(at - s->start), !fit};
    }
  } else if (call.kind == Call::Free) {
    const Observed::Live gone = seen.live[static_cast<std::size_t>(call.victim)];
    a.deallocate(gone.ptr);
    seen.live.erase(seen.live.begin() + call.victim);
    want.allocated -= gone.requested;
  } else {
    a.empty_cache();
    const auto [count, bytes] = seen.release_unused();
    want.system_frees += count, want.reserved -= bytes;
  }
  want.peak_allocated = std::max(before.peak_allocated, want.allocated);
  const std::vector<Observed::Stretch> stretches = seen.free_stretches();
  want.segments = int64_t(seen.segments.size());
  want.free_blocks = int64_t(stretches.size());
  want.free_bytes = want.largest_free_block = 0;
  for (const Observed::Stretch& f : stretches) {
    want.free_bytes += f.bytes;
    want.largest_free_block = std::max(want.largest_free_block, f.bytes);
  }
  const lab04_trace::State got = state_of(a);
  const std::vector<int64_t> w = want.values(), g = got.values();
  const std::vector<std::string> names = lab04_trace::State::names();
  // Why each figure is what the rules give, in the order of State::values().
  const std::vector<std::string> rule = {
      "allocated counts the REQUESTED bytes of the live blocks",
      "the peak is the most allocated bytes so far",
      "reserved holds every segment taken and not given back: a new one of max(rounded request, "
      "kSegment) bytes, the fully free ones given back by empty_cache() or the limit",
      "a system allocation only when no free block fits",
      "a system free for every fully free segment given back, only by empty_cache() or a request "
      "that would exceed the limit",
      "an OOM counted (throw_oom) only when the request exceeds the limit once the cache is given "
      "back",
      "the segments taken and not given back",
      "freed neighbours merge, so each stretch of free bytes between live blocks of a segment is "
      "ONE free block",
      "the free bytes are the reserved bytes that no live block holds",
      "the largest free stretch between live blocks"};
  for (std::size_t k = 0; k < w.size(); ++k) {
    if (w[k] != g[k]) {
      why << names[k] << " " << g[k] << ", the rules give " << w[k] << " (" << rule[k] << ")";
      return why.str();
    }
  }
  return "";
}

// Replays the seeded trace of `test` on your allocator and checks, after every call, the rules'
// properties: where the block landed, the statistics and the cache. Stops at the first call that
// breaks one, and says which.
void expect_trace_follows_the_rules(const std::string& test, int calls, int64_t limit) {
  lab04_trace::TraceDraws draws(test);
  auto a = std::make_shared<LabCachingAllocator>();
  if (limit > 0) a->set_memory_limit(limit);
  gtl::judge::Outputs recorded(test);
  Observed seen;
  for (int i = 0; i < calls; ++i) {
    const lab04_trace::Call call =
        draws.next(int64_t(seen.live.size()), [&](int64_t bytes) { return seen.ambiguous(bytes); });
    lab04_trace::Place place;
    const std::string problem = replay_call(*a, seen, call, limit, place);
    recorded.record_all(lab04_trace::record_of(place, state_of(*a)));
    if (!problem.empty()) {
      ADD_FAILURE() << "TODO 2: call " << i + 1 << " of " << calls << ", " << call.describe()
                    << ": " << problem
                    << ". The calls before it followed the rules: revisit the rule in "
                    << "parentheses (segments are numbered in the order taken from the system; "
                    << gtl::test_seed::describe() << ")";
      return;
    }
  }
  for (const Observed::Live& l : seen.live) a->deallocate(l.ptr);
}

TEST(CachingAllocator, FollowsTheRulesOnASeededTrace) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  expect_trace_follows_the_rules("CachingAllocator.FollowsTheRulesOnASeededTrace",
                                 lab04_trace::kTraceCalls, 0);
}

TEST(CachingAllocator, OutOfMemoryOnASeededTraceUnderALimit) {
  const auto call = lab04_student_call::todo2();  // no core caching allocator inside
  expect_trace_follows_the_rules("CachingAllocator.OutOfMemoryOnASeededTraceUnderALimit",
                                 lab04_trace::kTraceCalls, lab04_trace::kTraceLimit);
}

}  // namespace
