// The inputs of lab 09's profiler checks (TODO 1), drawn from the grading seed (gtl_test_seed.h):
// the tests and the judge (judge/lab09_profiler_judge.cpp) draw them from here. Only inputs live
// here; what the answers are is the judge's business.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtl_test_seed.h"
#include "op_profiler.h"

namespace lab09_profiler_cases {

// The nets of the recording checks: the sizes and seed of each, and how many steps are recorded
// after the warm-up.
struct NetCase {
  std::string what;
  lab09::NestedNetConfig net;
  int64_t steps = 2;
};
inline std::vector<NetCase> net_cases() {
  using gtl::test_seed::draw;
  std::mt19937_64 g = gtl::test_seed::generator("OpProfiler.Seeded");
  std::vector<NetCase> cases = {{"the handout's net (6 in, 8 hidden, 4 out, batch 3)", {}, 2}};
  NetCase c;
  c.net.in = draw(g, 2, 24);
  c.net.hidden = draw(g, 2, 32);
  c.net.out = draw(g, 1, 12);
  c.net.batch = draw(g, 1, 16);
  c.net.batches = draw(g, 2, 5);
  c.net.seed = static_cast<uint64_t>(draw(g, 0, 1000));
  c.steps = draw(g, 2, 4);
  c.what = "seeded net (" + std::to_string(c.net.in) + " in, " + std::to_string(c.net.hidden) +
           " hidden, " + std::to_string(c.net.out) + " out, batch " + std::to_string(c.net.batch) +
           ", seed " + std::to_string(c.net.seed) + ", " + std::to_string(c.steps) + " steps), " +
           gtl::test_seed::describe();
  cases.push_back(c);
  return cases;
}

// Made-up ops for key_averages: a few kinds in both passes, whole microseconds (sums are exact),
// totals that tie between rows, and rows where only some calls have a device time.
inline std::vector<lab09::OpRecord> seeded_records() {
  using gtl::test_seed::draw;
  std::mt19937_64 g = gtl::test_seed::generator("KeyAverages.Seeded");
  const char* kinds[] = {"linear", "relu", "gelu", "layernorm", "conv2d"};
  const char* passes[] = {"forward", "backward"};
  std::vector<lab09::OpRecord> ops;
  const int64_t n = draw(g, 30, 60);
  for (int64_t i = 0; i < n; ++i) {
    lab09::OpRecord r;
    r.kind = kinds[draw(g, 0, 4)];
    r.pass = passes[draw(g, 0, 1)];
    r.path = std::to_string(i);
    r.host_us = static_cast<double>(draw(g, 1, 6));
    // Device times on most kinds; "conv2d" rows mix timed and untimed calls.
    if (r.kind != std::string("layernorm") && (r.kind != std::string("conv2d") || draw(g, 0, 1)))
      r.device_us = static_cast<double>(draw(g, 1, 6));
    r.cost.flops = static_cast<double>(draw(g, 0, 1 << 20));
    r.cost.bytes = static_cast<double>(draw(g, 0, 1 << 16));
    r.allocated_bytes = draw(g, -4096, 4096);
    r.launches.kernels = draw(g, 0, 3);
    r.launches.library = draw(g, 0, 1);
    ops.push_back(r);
  }
  // Two rows that tie: the same calls of "tie_b" and "tie_a" (the key order decides).
  for (const char* kind : {"tie_b", "tie_a"})
    for (int k = 0; k < 2; ++k) {
      lab09::OpRecord r;
      r.kind = kind;
      r.pass = "forward";
      r.path = kind;
      r.host_us = 50;
      r.device_us = 7;
      ops.push_back(r);
    }
  // A row with many calls of little time: a sort by calls puts it first, a sort by time last.
  for (int k = 0; k < 40; ++k) {
    lab09::OpRecord r;
    r.kind = "flatten";
    r.pass = "forward";
    r.path = "many";
    r.host_us = 0;
    r.device_us = 0;
    ops.push_back(r);
  }
  return ops;
}

}  // namespace lab09_profiler_cases
