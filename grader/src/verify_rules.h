// What `gtl-grade verify` makes of one check, given the solution's and the starter's results.
// Pure functions, so the rules are unit-tested without building or running a lab.
//
// The rule for timing on a CPU. A speed check that runs without a GPU times the solution on
// whatever CPU verify runs on: its speedup depends on that CPU, its C library's malloc and what
// else the machine is doing, not only on the code (the same solution measured 45x on one 2-core
// machine and 18.5x on another of the same kind). Verify must never fail because a machine is
// slower, so for such a check it holds the solution to the check's partial-credit floor (its
// `partial_from`, which every CPU speed check must have, rubric.cpp) instead of the full bar,
// and prints the figure. A student is still graded against the full bar. GPU speed checks keep
// the full bar: they run only on a lent GPU, where `calibrate` re-derives the bar from the
// solution measured on that same GPU.
#pragma once

#include <string>

#include <vector>

#include "rubric.h"
#include "scoring.h"

namespace gtl::grader {

// A speed check that runs where there is no GPU: its figure is a CPU timing.
bool timed_on_cpu(const CheckResult& check);

struct TwinVerdict {
  std::string verdict;  // the table's last column: "ok", "SOLUTION LOSES POINTS", ...
  std::string problem;  // non-empty: verify fails with this message
  std::string note;     // non-empty: printed under the table, verify still passes
};

// The verdict on one check. `covers_todo`: the rubric names the check under a TODO, so the
// starter (every TODO open) must earn none of its points.
TwinVerdict verify_twins(const std::string& lab, const CheckResult& solution,
                         const CheckResult& starter, bool covers_todo);

// A TODO whose checks are all worth 0 points earns nothing for the work it asks: one problem for
// each such TODO of `lab` ("lab 07: TODO 7 earns nothing: ...").
std::vector<std::string> todos_that_earn_nothing(const Rubric& lab);

}  // namespace gtl::grader
