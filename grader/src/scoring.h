// Turns runs into points. Pure functions of the rubric and the parsed results, so the
// arithmetic (partial credit, skipped GPU points) is unit-tested without running anything.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench_runner.h"
#include "gtest_runner.h"
#include "rubric.h"

namespace gtl::grader {

// passed: full points; partial: some; failed: none; skipped: not graded here (e.g. no GPU), its
// points are counted apart, neither as zero nor as full marks.
enum class Status { kPassed, kPartial, kFailed, kSkipped };
const char* to_string(Status status);

struct CheckResult {
  std::string name;
  CheckKind kind = CheckKind::kTest;
  bool hidden = false;
  bool requires_gpu = false;
  bool requires_cuda = false;
  Status status = Status::kFailed;
  double score = 0;
  double max_score = 0;
  std::string reason;   // one line
  std::string details;  // failure messages, output excerpts
  std::vector<TestResult> tests;

  // Speed and memory checks: the measured figure and the line it is held against.
  std::optional<double> figure;     // speedup, or counter value/ratio
  std::optional<double> threshold;  // min_speedup, max_value or max_ratio
  std::optional<double> partial_from;
  std::string figure_label;               // "speedup", "peak_allocated_bytes", ...
  std::optional<double> solution_figure;  // speed: the solution's speedup on this GPU (calibrated)
  std::string calibrated_on;              // ... and the GPU it was measured on
  bool higher_is_better = true;

  // A stretch step: worth 0 points, so its pass/fail is shown ("stretch, not graded") in a
  // neutral colour, never as a red failure that costs nothing.
  bool stretch() const { return max_score == 0 && status != Status::kSkipped; }
};

struct LabResult {
  std::string lab, title, dir;
  bool built = false;                       // at least one of the lab's binaries built
  std::vector<std::string> failed_targets;  // binaries that do not compile (their checks score 0)
  std::string build_errors;                 // first compiler errors (of the first failed target)
  std::string error;                        // the lab could not be graded (missing files, ...)
  std::vector<std::string> open_todos;      // "file:line: TODO(lab01): ..." still in the submission
  std::vector<CheckResult> checks;
  // What to do next, where the report ends: "TODO 1a in reduce.cu, see
  // labs/02-cuda-kernels/README.md#todo-1a" (next_step()); "" when every graded check passes.
  std::string next_step;

  double score() const;
  double max_score() const;       // of the checks graded here
  double skipped_points() const;  // of the checks not graded here
  // What does not compile, as reports head the compiler errors: "The lab does not compile" when
  // nothing built, else the failed binaries; "" when everything built.
  std::string compile_problem() const;
};

struct GradeResult {
  std::string submission;
  std::string error;    // grading itself failed (the results still say so)
  int exit_code = 0;    // 0, or the documented code of what went wrong (docs/grader.md)
  std::string sandbox;  // "bubblewrap", or "none: <why>" (docs/grader.md, "Trust model")
  std::string seed;     // the grading seed the tests drew their shapes from (GTL_TEST_SEED)
  std::vector<LabResult> labs;

  double score() const;
  double max_score() const;
  double skipped_points() const;
};

// Points as reports print them: 4 significant digits, and -0 or a rounding residue as 0.
std::string pts(double points);

// Fraction of the points for a speedup: 1 at or above min_speedup; with partial_from, linear
// from 0 at partial_from to 1 at min_speedup; 0 otherwise (and for NaN).
double speed_credit(double speedup, double min_speedup, std::optional<double> partial_from);

CheckResult score_test_check(const Check& check, const GtestRun& run);

// The first TODO, in rubric order, with a graded check that did not pass (stretch and skipped
// checks aside): "TODO 1a in reduce.cu, see labs/02-cuda-kernels/README.md#todo-1a". The anchor
// is the handout's own `<a id="todo-1a"></a>`, else that of its first heading naming "TODO 1a"
// (GitHub's heading ids); without either, the handout's path alone. "" when no TODO has a failing
// check.
std::string next_step(const Rubric& rubric, const std::vector<CheckResult>& checks,
                      const std::string& handout_text);

// GitHub's id of a Markdown heading: "TODO 1a: the block sum" -> "todo-1a-the-block-sum".
std::string heading_anchor(const std::string& heading);

// A benchmark that found its own result wrong (it reported an error whose message says "wrong")
// voids the correctness of the TODO it times: code right only under the test harness must not
// keep the test points. Every test check of a TODO with such a speed or memory check scores 0.
void fail_todos_with_wrong_benchmarks(const Rubric& rubric, std::vector<CheckResult>& checks);
CheckResult score_speed_check(const Check& check, const BenchRun& run);
CheckResult score_memory_check(const Check& check, const BenchRun& run);
CheckResult skipped_check(const Check& check, const std::string& reason);
CheckResult failed_check(const Check& check, const std::string& reason,
                         const std::string& details = "");

}  // namespace gtl::grader
