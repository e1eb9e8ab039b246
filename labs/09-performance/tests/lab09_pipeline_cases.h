// The inputs of lab 09's TODO 3 checks (the input pipeline), drawn from the grading seed
// (gtl_test_seed.h): the tests and the judge (judge/lab09_pipeline_judge.cpp) draw them from here.
// Only inputs live here, and the handout's worked case; the counts of the seeded cases are the
// judge's business.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtl_test_seed.h"
#include "input_pipeline.h"

namespace lab09_pipeline_cases {

struct PipelineCase {
  std::string what;
  lab09::SlowDataset::Config data;
  int workers = 1, depth = 1;
  lab09::RunConfig run;
};

inline std::string describe(const PipelineCase& c) {
  std::string costs;
  for (int64_t p : c.data.costs) {
    if (!costs.empty()) costs += ",";
    costs += std::to_string(p);
  }
  return c.what + " (" + std::to_string(c.data.batches) + " batches, costs {" + costs +
         "} ticks, a step of " + std::to_string(c.run.step_ticks) +
         " ticks, W = " + std::to_string(c.workers) + ", D = " + std::to_string(c.depth) + ", " +
         std::to_string(c.run.epochs) + " epochs)";
}

// The handout's worked cases (TODO 3): 6 batches of P = 3 ticks, steps of S = 1 tick, 2 epochs,
// with the waits the handout derives.
struct Worked {
  PipelineCase c;
  int64_t waits;
};
inline std::vector<Worked> worked_cases() {
  auto make = [](const char* what, int w, int d) {
    PipelineCase c;
    c.what = what;
    c.data.batches = 6;
    c.data.costs = {3};
    c.workers = w;
    c.depth = d;
    c.run = {1, 2};
    return c;
  };
  return {{make("worked: W = 3, D = 3", 3, 3), 1},
          {make("worked: W = 3, D = 2", 3, 2), 6},
          {make("worked: W = 2, D = 4", 2, 4), 6},
          {make("worked: W = 1, D = 1", 1, 1), 12}};
}

// Seeded cases: batches whose costs differ (so loads end out of order), steps of 1 to 3 ticks,
// 1 to 4 workers, depths 1 to 6, 2 epochs; the data seed drawn too.
inline std::vector<PipelineCase> seeded_cases(const std::string& test, int n) {
  using gtl::test_seed::draw;
  std::mt19937_64 g = gtl::test_seed::generator(test);
  std::vector<PipelineCase> cases;
  for (int i = 0; i < n; ++i) {
    PipelineCase c;
    c.data.batches = draw(g, 3, 7);
    c.data.costs.clear();
    const int64_t k = draw(g, 2, 4);
    for (int64_t j = 0; j < k; ++j) c.data.costs.push_back(draw(g, 1, 6));
    c.data.rows = draw(g, 1, 4);
    c.data.cols = draw(g, 1, 3);
    c.data.seed = static_cast<uint64_t>(draw(g, 1, 1000));
    c.workers = static_cast<int>(draw(g, 1, 4));
    c.depth = static_cast<int>(draw(g, 1, 6));
    c.run = {draw(g, 1, 3), 2};
    c.what = "seeded case " + std::to_string(i + 1) + ", " + gtl::test_seed::describe();
    cases.push_back(c);
  }
  return cases;
}

// The error case: batch fail_at (in the first or the second epoch) throws. It costs 1 tick and
// every other batch 3 to 5, with at least 2 workers and a depth of 3 or more: the failing load
// ends before the batch before it, so a next() that rethrows an error as soon as one is there,
// instead of at its batch, fails.
inline PipelineCase error_case() {
  using gtl::test_seed::draw;
  std::mt19937_64 g = gtl::test_seed::generator("InputPipeline.Errors");
  PipelineCase c;
  c.data.batches = draw(g, 3, 6);
  c.data.costs.clear();
  for (int64_t k = 0; k < 2 * c.data.batches; ++k) c.data.costs.push_back(draw(g, 3, 5));
  c.data.seed = static_cast<uint64_t>(draw(g, 1, 1000));
  c.data.fail_at = draw(g, 1, 2 * c.data.batches - 1);
  c.data.costs[static_cast<size_t>(c.data.fail_at)] = 1;
  c.workers = static_cast<int>(draw(g, 2, 4));
  c.depth = static_cast<int>(draw(g, 3, 5));
  c.run = {1, 2};
  c.what = "batch " + std::to_string(c.data.fail_at) + " throws, " + gtl::test_seed::describe();
  return c;
}

}  // namespace lab09_pipeline_cases
