// A seeded trace of allocator calls for TODO 2's rules, and the layout of what the tests record
// after each call. Shared by the tests, which replay it on your allocator and check the rules'
// properties after every call (caching_allocator_test.cpp), and the lab's judge, which replays it
// on its own model of the rules and compares the records.
//
// Why a trace on top of the scenarios: each scenario isolates one rule at one size. A rule that is
// right at those sizes and wrong at others (a split that keeps a remainder it should free, a
// segment sized from the wrong request, a best fit that stops at the first large enough block of
// a list) passes them, and fails somewhere in a few hundred mixed calls.
//
// Addresses are (segment, offset): segments are numbered in the order they were taken from the
// system. The trace leaves out the requests whose smallest fitting free blocks lie in two
// segments (the tie goes to the lower address, which only the system decides), so that every
// machine sees the same calls.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtl_test_seed.h"
#include "memory_lab.h"

namespace lab04_trace {

constexpr int64_t kRound = int64_t(lab04::LabCachingAllocator::kRound);
constexpr int64_t kSegment = int64_t(lab04::LabCachingAllocator::kSegment);
constexpr int kTraceCalls = 400;               // calls per trace
constexpr int64_t kTraceLimit = 5 * kSegment;  // the memory limit of the trace under a limit

// What the tests record after every call: the statistics and the cache.
struct State {
  int64_t allocated = 0, peak_allocated = 0, reserved = 0;
  int64_t system_allocs = 0, system_frees = 0, ooms = 0;
  int64_t segments = 0, free_blocks = 0, free_bytes = 0, largest_free_block = 0;

  std::vector<int64_t> values() const {
    return {allocated, peak_allocated, reserved,    system_allocs, system_frees,
            ooms,      segments,       free_blocks, free_bytes,    largest_free_block};
  }
  static std::vector<std::string> names() {
    return {"allocated bytes",    "peak allocated bytes", "reserved bytes",
            "system allocations", "system frees",         "OOMs",
            "segments",           "free blocks",          "free bytes",
            "largest free block"};
  }
};

// Where an allocation landed.
struct Place {
  int64_t segment = -1;  // -1: out of memory, or not an allocation
  int64_t offset = 0;
  bool new_segment = false;
};

// One call of the trace. Free and the live allocation it frees: the `victim`-th of those still
// live, in the order they were made.
struct Call {
  enum Kind { Allocate, Free, EmptyCache } kind = Allocate;
  int64_t bytes = 0;
  int64_t victim = 0;

  std::string describe() const {
    std::ostringstream s;
    if (kind == Allocate) s << "allocate(" << bytes << ")";
    if (kind == Free) s << "deallocate(live block #" << victim << ", counted in allocation order)";
    if (kind == EmptyCache) s << "empty_cache()";
    return s.str();
  }
};

// The calls drawn from the grading seed for `test`: requests from 1 byte to 5 MiB (a third of
// them above a segment's remainder, one in ten above a segment), frees of random live blocks, now
// and then empty_cache(). Which call comes next depends on the allocator's state only through
// the number of live blocks and `ambiguous(bytes)` (the request's smallest fitting free blocks lie
// in two segments: drawn again), so a replay that follows the rules sees the same calls.
class TraceDraws {
 public:
  explicit TraceDraws(const std::string& test) : g_(gtl::test_seed::generator(test)) {}

  Call next(int64_t live, const std::function<bool(int64_t)>& ambiguous) {
    for (;;) {
      const int64_t kind = gtl::test_seed::draw(g_, 0, 99);
      Call c;
      if (kind < 4) {
        c.kind = Call::EmptyCache;
      } else if (kind < 42 && live > 0) {
        c.kind = Call::Free;
        c.victim = gtl::test_seed::draw(g_, 0, live - 1);
      } else {
        const int64_t range = gtl::test_seed::draw(g_, 0, 9);
        c.bytes = range < 6   ? gtl::test_seed::draw(g_, 1, 64 << 10)
                  : range < 9 ? gtl::test_seed::draw(g_, 64 << 10, 3 << 19)
                              : gtl::test_seed::draw(g_, kSegment - kRound, 5 << 20);
        if (ambiguous(c.bytes)) continue;
      }
      return c;
    }
  }

 private:
  std::mt19937_64 g_;
};

// The test's record for the judge: per call, the segment and offset of an allocation (-1 -1
// otherwise) and the state.
inline std::vector<int64_t> record_of(const Place& place, const State& state) {
  std::vector<int64_t> v = {place.segment, place.segment >= 0 ? place.offset : -1};
  const std::vector<int64_t> s = state.values();
  v.insert(v.end(), s.begin(), s.end());
  return v;
}

}  // namespace lab04_trace
