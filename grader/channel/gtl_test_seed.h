// The grading seed: it chooses the sizes, alignments and values a test adds to its fixed edge
// cases, so that code right only for the shapes a test is known to use does not pass.
//
// gtl-grade draws a seed for every grading (or takes the instructor's: docs/grader.md) and passes
// it in GTL_TEST_SEED; the report records it. Outside the grader the seed is 1, so a run is
// reproducible; a failing message names the seed, and `GTL_TEST_SEED=<seed> <test program>`
// repeats the grader's shapes exactly. The value is read once, before main() (the verdict
// listener reads it during static initialisation and reports it to the grader, which rejects a
// run whose program saw another seed than the one it was given).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

namespace gtl::test_seed {

// GTL_TEST_SEED, read once; 1 when unset.
inline std::uint64_t seed() {
  static const std::uint64_t value = [] {
    const char* text = std::getenv("GTL_TEST_SEED");
    return text != nullptr ? std::strtoull(text, nullptr, 10) : std::uint64_t{1};
  }();
  return value;
}

// A generator for one use (e.g. the test's name): the seed mixed with `what`, so that each test
// draws its own values and adding a test does not change the others' shapes.
inline std::mt19937_64 generator(const std::string& what) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a of `what`, then the seed
  for (unsigned char c : what) h = (h ^ c) * 1099511628211ull;
  std::seed_seq seq{static_cast<std::uint32_t>(seed()), static_cast<std::uint32_t>(seed() >> 32),
                    static_cast<std::uint32_t>(h), static_cast<std::uint32_t>(h >> 32)};
  return std::mt19937_64(seq);
}

// A number drawn uniformly from [lo, hi].
inline std::int64_t draw(std::mt19937_64& g, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(g);
}

// "seed 123 (GTL_TEST_SEED=123 repeats it)", for failure messages.
inline std::string describe() {
  return "seed " + std::to_string(seed()) + " (GTL_TEST_SEED=" + std::to_string(seed()) +
         " repeats it)";
}

}  // namespace gtl::test_seed
