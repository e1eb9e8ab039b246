// The judge's model of TODO 2's rules (include/memory_lab.h, the handout's "A caching
// allocator"): it replays the seeded trace of lab04_allocator_trace.h and gives, after every
// call, where the block lands and the statistics and cache the rules leave, which the judge
// compares with what the tests recorded. Instructor-side only: the tests check the rules'
// properties instead (caching_allocator_test.cpp).
//
// Addresses are (segment, offset): segments are numbered in the order they were taken from the
// system. The rules compare the addresses of two segments only when a request finds equally small
// free blocks in both (the tie goes to the lower address, which only the system knows), and the
// trace leaves out the requests that would (ambiguous()), so that every machine sees the same
// states.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "lab04_allocator_trace.h"

namespace lab04_model {

using lab04_trace::Call;
using lab04_trace::kRound;
using lab04_trace::kSegment;
using lab04_trace::Place;
using lab04_trace::State;
using lab04_trace::TraceDraws;

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

// A call of the trace and what the model gives for it.
struct Expected {
  Call call;
  Place place;  // Allocate: where the block lands (segment -1: OutOfMemoryError)
  State state;  // after the call
};

// `calls` calls drawn from the grading seed for `test` (lab04_allocator_trace.h), with the
// model's answer to each. Under `limit` (0: none) some requests fail and give the cache back first.
inline std::vector<Expected> seeded_trace(const std::string& test, int calls, int64_t limit = 0) {
  TraceDraws draws(test);
  RuleModel model(limit);
  std::vector<Place> live;
  std::vector<Expected> trace;
  while (static_cast<int>(trace.size()) < calls) {
    Expected e;
    e.call = draws.next(static_cast<int64_t>(live.size()),
                        [&](int64_t bytes) { return model.ambiguous(bytes); });
    if (e.call.kind == Call::EmptyCache) {
      model.empty_cache();
    } else if (e.call.kind == Call::Free) {
      model.deallocate(live[static_cast<std::size_t>(e.call.victim)]);
      live.erase(live.begin() + e.call.victim);
    } else {
      e.place = model.allocate(e.call.bytes);
      if (e.place.segment >= 0) live.push_back(e.place);
    }
    e.state = model.state();
    trace.push_back(e);
  }
  return trace;
}

}  // namespace lab04_model
