// bitwise_diff: whether two float vectors hold the same bits, for tests that require results bit
// for bit (integer-valued inputs whose sums are exact in any order, a deterministic reduction, a
// run in another process read back from its hex floats).
//
// Why bits and not ==: -0 == 0 and NaN != NaN, so == would pass a sign flip and fail a run that
// correctly gives NaN; memcmp compares what a checkpoint or a second run must reproduce.
//
// Needs no GoogleTest, so the labs' judges can use the helpers of the tests that include it.
#pragma once

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace gtl::testing {

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

}  // namespace gtl::testing
