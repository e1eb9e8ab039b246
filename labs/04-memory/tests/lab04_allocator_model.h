// TODO 2's rules as a model, and a seeded trace of allocator calls to hold a caching allocator to
// them after every call. Shared by the tests and the lab's judge.
//
// Why a trace on top of the scenarios: each scenario isolates one rule at one size. A rule that is
// right at those sizes and wrong at others (a split that keeps a remainder it should free, a
// segment sized from the wrong request, a best fit that stops at the first large enough block of
// a list) passes them, and fails somewhere in a few hundred mixed calls.
//
// Addresses are (segment, offset): segments are numbered in the order they were taken from the
// system. The rules compare the addresses of two segments only when a request finds equally small
// free blocks in both (the tie goes to the lower address, which only the system knows), and the
// trace leaves out the requests that would, so that every machine sees the same states.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gtl_test_seed.h"
#include "memory_lab.h"

namespace lab04_model {

constexpr int64_t kRound = int64_t(lab04::LabCachingAllocator::kRound);
constexpr int64_t kSegment = int64_t(lab04::LabCachingAllocator::kSegment);
constexpr int kTraceCalls = 400;               // calls per trace
constexpr int64_t kTraceLimit = 5 * kSegment;  // the memory limit of the trace under a limit

// What the tests compare after every call: the statistics and the cache.
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
  int64_t segment = -1;  // -1: out of memory
  int64_t offset = 0;
  bool new_segment = false;
};

class RuleModel {
 public:
  explicit RuleModel(int64_t limit = 0) : limit_(limit) {}

  // Whether allocate(bytes) would choose between equally small free blocks of two segments.
  bool ambiguous(int64_t bytes) const {
    const int64_t size = round(bytes);
    int64_t best = -1;
    std::vector<int64_t> holders;
    for (const auto& [id, blocks] : segments_) {
      for (const Block& b : blocks) {
        if (!b.free || b.size < size) continue;
        if (best < 0 || b.size < best) {
          best = b.size;
          holders = {id};
        } else if (b.size == best && holders.back() != id) {
          holders.push_back(id);
        }
      }
    }
    return holders.size() > 1;
  }

  Place allocate(int64_t bytes) {
    const int64_t size = round(bytes);
    Place place = best_fit(size);
    if (place.segment < 0) {
      const int64_t segment = std::max(size, kSegment);
      if (limit_ > 0 && reserved_ + segment > limit_) release_free_segments();
      if (limit_ > 0 && reserved_ + segment > limit_) {
        ++ooms_;
        return Place{};
      }
      place = Place{next_id_++, 0, true};
      segments_[place.segment] = {Block{0, segment, true}};
      reserved_ += segment;
      ++system_allocs_;
    }
    std::vector<Block>& blocks = segments_[place.segment];
    auto it = std::find_if(blocks.begin(), blocks.end(),
                           [&](const Block& b) { return b.offset == place.offset; });
    if (it->size - size >= kRound) {
      it = blocks.insert(it + 1, Block{it->offset + size, it->size - size, true}) - 1;
      it->size = size;
    }
    it->free = false;
    it->requested = bytes;
    allocated_ += bytes;
    peak_ = std::max(peak_, allocated_);
    return place;
  }

  void deallocate(const Place& place) {
    std::vector<Block>& blocks = segments_.at(place.segment);
    auto it = std::find_if(blocks.begin(), blocks.end(),
                           [&](const Block& b) { return b.offset == place.offset; });
    allocated_ -= it->requested;
    it->free = true;
    it->requested = 0;
    if (it + 1 != blocks.end() && (it + 1)->free) {
      it->size += (it + 1)->size;
      blocks.erase(it + 1);
    }
    if (it != blocks.begin() && (it - 1)->free) {
      (it - 1)->size += it->size;
      blocks.erase(it);
    }
  }

  void empty_cache() { release_free_segments(); }

  std::vector<int64_t> segment_ids() const {
    std::vector<int64_t> ids;
    for (const auto& [id, blocks] : segments_) ids.push_back(id);
    return ids;
  }

  State state() const {
    State s;
    s.allocated = allocated_;
    s.peak_allocated = peak_;
    s.reserved = reserved_;
    s.system_allocs = system_allocs_;
    s.system_frees = system_frees_;
    s.ooms = ooms_;
    s.segments = static_cast<int64_t>(segments_.size());
    for (const auto& [id, blocks] : segments_) {
      for (const Block& b : blocks) {
        if (!b.free) continue;
        s.free_blocks += 1;
        s.free_bytes += b.size;
        s.largest_free_block = std::max(s.largest_free_block, b.size);
      }
    }
    return s;
  }

 private:
  struct Block {
    int64_t offset = 0, size = 0;
    bool free = true;
    int64_t requested = 0;
  };
  static int64_t round(int64_t bytes) {
    return std::max<int64_t>(1, (bytes + kRound - 1) / kRound) * kRound;
  }

  // The smallest free block that fits (the lowest offset among equals in one segment).
  Place best_fit(int64_t size) const {
    Place place;
    int64_t best = -1;
    for (const auto& [id, blocks] : segments_) {
      for (const Block& b : blocks) {
        if (b.free && b.size >= size && (best < 0 || b.size < best)) {
          best = b.size;
          place = Place{id, b.offset, false};
        }
      }
    }
    return place;
  }

  void release_free_segments() {
    for (auto it = segments_.begin(); it != segments_.end();) {
      if (it->second.size() == 1 && it->second.front().free) {
        reserved_ -= it->second.front().size;
        ++system_frees_;
        it = segments_.erase(it);
      } else {
        ++it;
      }
    }
  }

  int64_t limit_ = 0;
  std::map<int64_t, std::vector<Block>> segments_;  // id -> blocks in offset order
  int64_t next_id_ = 0;
  int64_t allocated_ = 0, peak_ = 0, reserved_ = 0;
  int64_t system_allocs_ = 0, system_frees_ = 0, ooms_ = 0;
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

// A call of the trace and what the model gives for it.
struct Expected {
  Call call;
  Place place;                    // Allocate: where the block lands (segment -1: OutOfMemoryError)
  State state;                    // after the call
  std::vector<int64_t> segments;  // the segments held after the call
};

// `calls` calls drawn from the grading seed for `test`, with the model's answer to each: requests
// from 1 byte to 5 MiB (a third of them above a segment's remainder, one in ten above a segment),
// frees of random live blocks, now and then empty_cache(). Under `limit` (0: none) some requests
// fail and give the cache back first.
inline std::vector<Expected> seeded_trace(const std::string& test, int calls, int64_t limit = 0) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  RuleModel model(limit);
  std::vector<Place> live;
  std::vector<Expected> trace;
  while (static_cast<int>(trace.size()) < calls) {
    const int64_t kind = gtl::test_seed::draw(g, 0, 99);
    Expected e;
    if (kind < 4) {
      e.call.kind = Call::EmptyCache;
      model.empty_cache();
    } else if (kind < 42 && !live.empty()) {
      e.call.kind = Call::Free;
      e.call.victim = gtl::test_seed::draw(g, 0, static_cast<int64_t>(live.size()) - 1);
      model.deallocate(live[static_cast<std::size_t>(e.call.victim)]);
      live.erase(live.begin() + e.call.victim);
    } else {
      const int64_t range = gtl::test_seed::draw(g, 0, 9);
      e.call.bytes = range < 6   ? gtl::test_seed::draw(g, 1, 64 << 10)
                     : range < 9 ? gtl::test_seed::draw(g, 64 << 10, 3 << 19)
                                 : gtl::test_seed::draw(g, kSegment - kRound, 5 << 20);
      if (model.ambiguous(e.call.bytes)) continue;  // the system's addresses would decide
      e.place = model.allocate(e.call.bytes);
      if (e.place.segment >= 0) live.push_back(e.place);
    }
    e.state = model.state();
    e.segments = model.segment_ids();
    trace.push_back(e);
  }
  return trace;
}

// The test's record for the judge: per call, the segment and offset of an allocation (-1 -1
// otherwise) and the state.
inline std::vector<int64_t> record_of(const Place& place, const State& state) {
  std::vector<int64_t> v = {place.segment, place.segment >= 0 ? place.offset : -1};
  const std::vector<int64_t> s = state.values();
  v.insert(v.end(), s.begin(), s.end());
  return v;
}

}  // namespace lab04_model
