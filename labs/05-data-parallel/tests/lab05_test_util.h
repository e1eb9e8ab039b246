// Helpers of lab 05's tests: per-rank inputs made of small integers (their sums are exact in
// float32 in any order, so results compare bit for bit), bitwise comparison of float vectors, and
// collecting every rank's trace after a run.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "bitwise_diff.h"
#include "gtl/distributed/in_process.h"

namespace lab05::testing {

// Element i of rank r: an integer in [-5, 5].
inline float value(int rank, int64_t i) {
  return static_cast<float>((i * 7 + rank * 13) % 11 - 5);
}

inline std::vector<float> values(int rank, int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value(rank, i);
  return v;
}

inline std::vector<float> summed(int world, int64_t n) {
  std::vector<float> out = values(0, n);
  for (int r = 1; r < world; ++r) {
    for (int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] += value(r, i);
  }
  return out;
}

using gtl::testing::bitwise_diff;  // bitwise_diff.h

inline gtl::dist::RunOptions fast(bool deterministic = false) {
  gtl::dist::RunOptions o;
  o.timeout = std::chrono::seconds(10);
  o.deterministic = deterministic;
  return o;
}

}  // namespace lab05::testing
