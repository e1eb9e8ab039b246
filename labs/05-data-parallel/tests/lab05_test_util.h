// Helpers of lab 05's tests: per-rank inputs made of small integers (their sums are exact in
// float32 in any order, so results compare bit for bit), bitwise comparison of float vectors, and
// collecting every rank's trace after a run.
#pragma once

#include <cstdint>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

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

// "" when a and b are the same bits; else the first index that differs, both values.
inline std::string bitwise_diff(const std::vector<float>& actual,
                                const std::vector<float>& expected) {
  if (actual.size() != expected.size()) {
    return "got " + std::to_string(actual.size()) + " values, expected " +
           std::to_string(expected.size());
  }
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::memcmp(&actual[i], &expected[i], sizeof(float)) != 0) {
      std::ostringstream s;
      s.precision(9);
      s << "element " << i << ": got " << actual[i] << ", expected " << expected[i];
      return s.str();
    }
  }
  return "";
}

inline gtl::dist::RunOptions fast(bool deterministic = false) {
  gtl::dist::RunOptions o;
  o.timeout = std::chrono::seconds(10);
  o.deterministic = deterministic;
  return o;
}

}  // namespace lab05::testing
