// Scoring arithmetic: all-or-nothing and partial tests, speed credit, memory bounds, and points
// of checks that could not run here counted apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "files.h"
#include "rubric.h"
#include "scoring.h"

namespace gtl::grader {
namespace {

Check test_check(bool partial) {
  Check c;
  c.name = "correct";
  c.kind = CheckKind::kTest;
  c.points = 6;
  c.partial = partial;
  return c;
}

GtestRun run_of(std::vector<TestOutcome> outcomes) {
  GtestRun run;
  for (std::size_t i = 0; i < outcomes.size(); ++i)
    run.tests.push_back({"S.T" + std::to_string(i), outcomes[i], "file.cpp:3\nExpected 1, got 2"});
  return run;
}

TEST(SpeedCredit, FullPartialAndNone) {
  EXPECT_EQ(speed_credit(5.0, 4.0, std::nullopt), 1.0);
  EXPECT_EQ(speed_credit(4.0, 4.0, std::nullopt), 1.0) << "the threshold itself earns full marks";
  EXPECT_EQ(speed_credit(3.9, 4.0, std::nullopt), 0.0) << "no partial range: all or nothing";
  EXPECT_DOUBLE_EQ(speed_credit(3.0, 4.0, 2.0), 0.5) << "linear between partial_from and min";
  EXPECT_DOUBLE_EQ(speed_credit(2.5, 4.0, 2.0), 0.25);
  EXPECT_EQ(speed_credit(2.0, 4.0, 2.0), 0.0);
  EXPECT_EQ(speed_credit(1.0, 4.0, 2.0), 0.0);
  EXPECT_EQ(speed_credit(std::nan(""), 4.0, 2.0), 0.0) << "NaN never earns points";
}

TEST(TestCheck, AllOrNothingByDefault) {
  const CheckResult pass =
      score_test_check(test_check(false), run_of({TestOutcome::kPassed, TestOutcome::kPassed}));
  EXPECT_EQ(pass.status, Status::kPassed);
  EXPECT_EQ(pass.score, 6);
  const CheckResult fail =
      score_test_check(test_check(false), run_of({TestOutcome::kPassed, TestOutcome::kCrashed}));
  EXPECT_EQ(fail.status, Status::kFailed);
  EXPECT_EQ(fail.score, 0);
  EXPECT_EQ(fail.reason.rfind("Expected 1, got 2 [S.T1 crashed]; 1/2 tests passed", 0), 0u)
      << "the reason must start with the failure's lesson, then name the test: " << fail.reason;
}

TEST(TestCheck, PartialCreditPerTest) {
  const CheckResult r = score_test_check(
      test_check(true),
      run_of({TestOutcome::kPassed, TestOutcome::kPassed, TestOutcome::kTimedOut}));
  EXPECT_EQ(r.status, Status::kPartial);
  EXPECT_DOUBLE_EQ(r.score, 4.0);
  EXPECT_NE(r.details.find("S.T2 (timeout)"), std::string::npos) << r.details;
}

TEST(TestCheck, AllSkippedIsSkippedOnlyWhereTheRubricNeedsAGpu) {
  GtestRun run = run_of({TestOutcome::kSkipped, TestOutcome::kSkipped});
  run.tests[0].message = "no GPU: cudaGetDeviceCount failed";
  Check gpu = test_check(false);
  gpu.requires_gpu = true;
  const CheckResult r = score_test_check(gpu, run);
  EXPECT_EQ(r.status, Status::kSkipped) << "a requires: gpu check whose tests skip is not graded";
  EXPECT_NE(r.reason.find("no GPU"), std::string::npos) << r.reason;
  Check cuda = test_check(false);
  cuda.requires_cuda = true;
  EXPECT_EQ(score_test_check(cuda, run).status, Status::kSkipped);
  const CheckResult some =
      score_test_check(gpu, run_of({TestOutcome::kPassed, TestOutcome::kSkipped}));
  EXPECT_EQ(some.status, Status::kFailed) << "a skipped test among run ones is not a pass";
}

TEST(TestCheck, ASkipInACheckThatNeedsNoGpuScoresZero) {
  // Forging class: the student's code makes its own tests report "skipped", hoping the points
  // leave the total. Only the rubric decides what may be skipped.
  const CheckResult all =
      score_test_check(test_check(true), run_of({TestOutcome::kSkipped, TestOutcome::kSkipped}));
  EXPECT_EQ(all.status, Status::kFailed) << "skips in a cpu check are not 'not gradable here'";
  EXPECT_EQ(all.score, 0);
  EXPECT_NE(all.reason.find("does not require a GPU or CUDA"), std::string::npos) << all.reason;
  const CheckResult some =
      score_test_check(test_check(true),
                       run_of({TestOutcome::kPassed, TestOutcome::kPassed, TestOutcome::kSkipped}));
  EXPECT_EQ(some.score, 0) << "one skip voids the check, even with partial credit";
}

TEST(TestCheck, RunErrorFails) {
  GtestRun run;
  run.error = "no test of x matches Foo.*";
  const CheckResult r = score_test_check(test_check(false), run);
  EXPECT_EQ(r.status, Status::kFailed);
  EXPECT_EQ(r.reason, run.error);
}

Check speed_check() {
  Check c;
  c.name = "speed";
  c.kind = CheckKind::kSpeed;
  c.points = 4;
  c.benchmark = "BM_Fast";
  c.baseline = "BM_Slow";
  c.min_speedup = 4;
  c.partial_from = 2;
  return c;
}

BenchRun bench(double fast_ns, double slow_ns) {
  BenchRun run;
  run.stats["BM_Fast"] = {"BM_Fast", false, "", fast_ns, fast_ns, {{"peak", 50}}};
  run.stats["BM_Slow"] = {"BM_Slow", false, "", slow_ns, slow_ns, {{"peak", 200}}};
  return run;
}

TEST(SpeedCheck, RatioOfMediansWithPartialCredit) {
  const CheckResult full = score_speed_check(speed_check(), bench(10, 50));
  EXPECT_EQ(full.status, Status::kPassed);
  EXPECT_EQ(full.score, 4);
  EXPECT_DOUBLE_EQ(*full.figure, 5.0);
  const CheckResult half = score_speed_check(speed_check(), bench(10, 30));
  EXPECT_EQ(half.status, Status::kPartial);
  EXPECT_DOUBLE_EQ(half.score, 2.0);
  const CheckResult none = score_speed_check(speed_check(), bench(10, 15));
  EXPECT_EQ(none.status, Status::kFailed);
  EXPECT_EQ(none.score, 0);
}

TEST(SpeedCheck, MissingOrErroredBenchmarkFails) {
  BenchRun run = bench(10, 50);
  run.stats.erase("BM_Slow");
  EXPECT_NE(score_speed_check(speed_check(), run).reason.find("produced no result"),
            std::string::npos);
  run = bench(10, 50);
  run.stats["BM_Fast"].error = true;
  run.stats["BM_Fast"].error_message = "wrong result";
  const CheckResult r = score_speed_check(speed_check(), run);
  EXPECT_EQ(r.score, 0);
  EXPECT_NE(r.reason.find("wrong result"), std::string::npos);
  run = bench(0, 50);
  EXPECT_EQ(score_speed_check(speed_check(), run).score, 0) << "a zero time gives NaN, no points";
}

TEST(MemoryCheck, RatioAndAbsoluteBounds) {
  Check c;
  c.name = "mem";
  c.kind = CheckKind::kMemory;
  c.points = 2;
  c.benchmark = "BM_Fast";
  c.counter = "peak";
  c.baseline = "BM_Slow";
  c.max_ratio = 0.25;
  EXPECT_EQ(score_memory_check(c, bench(1, 1)).score, 2) << "50 / 200 = 0.25 <= 0.25";
  c.max_ratio = 0.2;
  EXPECT_EQ(score_memory_check(c, bench(1, 1)).status, Status::kFailed);
  c.baseline.clear();
  c.max_ratio.reset();
  c.max_value = 50;
  EXPECT_EQ(score_memory_check(c, bench(1, 1)).score, 2);
  c.max_value = 49;
  EXPECT_EQ(score_memory_check(c, bench(1, 1)).score, 0);
  c.counter = "bytes";
  EXPECT_NE(score_memory_check(c, bench(1, 1)).reason.find("reports no counter 'bytes'"),
            std::string::npos);
}

TEST(Totals, SkippedPointsAreCountedApart) {
  Check gpu = test_check(false);
  gpu.points = 3;
  gpu.requires_gpu = true;
  LabResult lab;
  lab.checks.push_back(
      score_test_check(test_check(true), run_of({TestOutcome::kPassed, TestOutcome::kFailed})));
  lab.checks.push_back(skipped_check(gpu, "requires a GPU"));
  lab.checks.push_back(failed_check(test_check(false), "does not compile"));
  EXPECT_DOUBLE_EQ(lab.score(), 3.0);
  EXPECT_DOUBLE_EQ(lab.max_score(), 12.0) << "the skipped check is not in the maximum";
  EXPECT_DOUBLE_EQ(lab.skipped_points(), 3.0) << "...nor zero: it is counted apart";
  GradeResult all;
  all.labs = {lab, lab};
  EXPECT_DOUBLE_EQ(all.score(), 6.0);
  EXPECT_DOUBLE_EQ(all.max_score(), 24.0);
  EXPECT_DOUBLE_EQ(all.skipped_points(), 6.0);
}

TEST(Totals, CompileProblemNamesWhatDoesNotCompile) {
  LabResult lab;
  EXPECT_EQ(lab.compile_problem(), "") << "everything built";
  lab.failed_targets = {"lab01_test", "lab01_bench"};
  lab.build_errors = "sum.cpp:1:1: error: x";
  EXPECT_EQ(lab.compile_problem(), "The lab does not compile") << "nothing built";
  lab.built = true;
  lab.failed_targets = {"lab01_bench"};
  EXPECT_EQ(lab.compile_problem(),
            "lab01_bench does not compile (only the checks that run it score 0)");
  lab.failed_targets = {"lab01_bench", "lab01_emu_test"};
  EXPECT_EQ(lab.compile_problem(),
            "lab01_bench, lab01_emu_test do not compile (only the checks that run them score 0)");
}

}  // namespace
}  // namespace gtl::grader

namespace gtl::grader {
namespace {

CheckResult result(const std::string& name, CheckKind kind, Status status, double score,
                   const std::string& reason) {
  CheckResult r;
  r.name = name;
  r.kind = kind;
  r.status = status;
  r.score = score;
  r.max_score = 6;
  r.reason = reason;
  return r;
}

TEST(TodoCrossCheck, ABenchmarkThatFoundAWrongResultVoidsTheTodosTests) {
  Rubric rubric;
  rubric.todos = {{"1", "a.cpp", {"correct", "speed"}, {}}, {"2", "b.cpp", {"other"}, {}}};
  std::vector<CheckResult> checks = {
      result("correct", CheckKind::kTest, Status::kPassed, 6, "3/3 tests passed"),
      result("speed", CheckKind::kSpeed, Status::kFailed, 0,
             "benchmark 'BM_Fast' reported an error: wrong result: sum is 7"),
      result("other", CheckKind::kTest, Status::kPassed, 6, "1/1 tests passed")};
  fail_todos_with_wrong_benchmarks(rubric, checks);
  EXPECT_EQ(checks[0].score, 0) << "right only under the test harness: the tests of TODO 1 fail";
  EXPECT_EQ(checks[0].status, Status::kFailed);
  EXPECT_NE(checks[0].reason.find("TODO 1 found a wrong result"), std::string::npos)
      << checks[0].reason;
  EXPECT_EQ(checks[2].score, 6) << "another TODO's checks are not touched";
}

TEST(TodoCrossCheck, ASlowOrCrashedBenchmarkDoesNotVoidTheTests) {
  Rubric rubric;
  rubric.todos = {{"1", "a.cpp", {"correct", "speed"}, {}}};
  std::vector<CheckResult> checks = {
      result("correct", CheckKind::kTest, Status::kPassed, 6, "3/3 tests passed"),
      result("speed", CheckKind::kSpeed, Status::kFailed, 0, "the benchmark program timed out")};
  fail_todos_with_wrong_benchmarks(rubric, checks);
  EXPECT_EQ(checks[0].score, 6) << "only a wrong result says the code is wrong";
}

Rubric reduction_rubric() {
  Rubric r;
  r.dir = "02-cuda-kernels";
  r.todos = {{"1a", "reduce.cu", {"sum-1a"}, {}},
             {"1b", "block_reduce.cuh", {"sum-1b", "stretch-1b"}, {}},
             {"2", "transpose.cu", {"transpose"}, {}}};
  return r;
}

CheckResult named(const std::string& name, Status status, double max_score = 2) {
  CheckResult c;
  c.name = name;
  c.status = status;
  c.max_score = max_score;
  return c;
}

TEST(NextStep, FirstTodoInRubricOrderWithAFailingCheck) {
  const std::vector<CheckResult> checks = {
      named("sum-1a", Status::kPassed), named("sum-1b", Status::kPartial),
      named("stretch-1b", Status::kFailed, 0), named("transpose", Status::kFailed)};
  EXPECT_EQ(next_step(reduction_rubric(), checks, "# Lab 2\n## Your TODOs\n### TODO 1b: warps\n"),
            "TODO 1b in block_reduce.cuh, see labs/02-cuda-kernels/README.md#todo-1b-warps")
      << "1a passes, so 1b (partial) is next, with its handout heading's anchor";
  EXPECT_EQ(next_step(reduction_rubric(), checks, "## Your TODOs\nTODO 1b is in the text only\n"),
            "TODO 1b in block_reduce.cuh, see labs/02-cuda-kernels/README.md")
      << "without a heading for the TODO, the handout's path alone";
  EXPECT_EQ(next_step(reduction_rubric(), checks, "### TODO 1bb\n### TODO 11b\n"),
            "TODO 1b in block_reduce.cuh, see labs/02-cuda-kernels/README.md")
      << "'TODO 1bb' and 'TODO 11b' are other TODOs' headings";
}

TEST(NextStep, TheHandoutsOwnTodoAnchorWins) {
  const std::vector<CheckResult> checks = {named("sum-1a", Status::kFailed)};
  EXPECT_EQ(next_step(reduction_rubric(), checks,
                      "| TODO | file |\n|---|---|\n| <a id=\"todo-1a\"></a>1a | `reduce.cu` |\n"
                      "### TODO 1a: trees\n"),
            "TODO 1a in reduce.cu, see labs/02-cuda-kernels/README.md#todo-1a")
      << "an <a id=\"todo-1a\"></a> anchor (here in the TODO table's row) is the link's target, "
         "before any heading's id";
  EXPECT_EQ(next_step(reduction_rubric(), checks, "<a id=\"todo-1ab\"></a>\n### TODO 11a\n"),
            "TODO 1a in reduce.cu, see labs/02-cuda-kernels/README.md")
      << "todo-1ab and 'TODO 11a' belong to other TODOs";
}

// The course's own handouts: whichever TODO the report names next, its link lands on that TODO.
TEST(NextStep, EveryTodoOfTheCourseLinksToItsAnchor) {
  const std::filesystem::path course =
      std::filesystem::path(GTL_GRADER_FIXTURES).parent_path().parent_path().parent_path();
  const std::vector<Rubric> labs = load_course_rubrics(course);
  ASSERT_FALSE(labs.empty()) << "no lab rubrics found under " << course;
  for (const Rubric& lab : labs) {
    const std::string handout = read_file(course / "labs" / lab.dir / "README.md");
    for (const Todo& todo : lab.todos) {
      std::vector<CheckResult> checks;  // this TODO's checks fail, every other check passes
      for (const Todo& other : lab.todos)
        for (const auto& name : other.checks) checks.push_back(named(name, Status::kPassed));
      for (auto& c : checks)
        if (std::find(todo.checks.begin(), todo.checks.end(), c.name) != todo.checks.end())
          c.status = Status::kFailed;
      const std::string next = next_step(lab, checks, handout);
      if (next.rfind("TODO ", 0) != 0) {
        ADD_FAILURE() << "labs/" << lab.dir << ": TODO " << todo.id
                      << " open, yet the report names no next step: '" << next << "'";
        continue;
      }
      // A check two TODOs share makes the earlier one next: that one's anchor is expected.
      const std::string named_id = next.substr(5, next.find(' ', 5) - 5);
      std::string anchor = "#todo-" + named_id;
      std::transform(anchor.begin(), anchor.end(), anchor.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      EXPECT_TRUE(next.size() > anchor.size() &&
                  next.compare(next.size() - anchor.size(), anchor.size(), anchor) == 0)
          << "labs/" << lab.dir << "/README.md: TODO " << todo.id << " open, the report says '"
          << next << "'; expected its link to end with " << anchor << " (the handout needs <a id=\""
          << anchor.substr(1) << "\"></a> in the TODO's row)";
    }
  }
}

TEST(NextStep, StretchAndSkippedChecksDoNotMakeATodoOpen) {
  const std::vector<CheckResult> checks = {
      named("sum-1a", Status::kPassed), named("sum-1b", Status::kPassed),
      named("stretch-1b", Status::kFailed, 0), named("transpose", Status::kSkipped)};
  EXPECT_EQ(next_step(reduction_rubric(), checks, ""), "")
      << "a failed stretch step costs nothing and a skipped check was not graded here";
}

TEST(HeadingAnchor, GitHubIds) {
  EXPECT_EQ(heading_anchor("TODO 1a"), "todo-1a");
  EXPECT_EQ(heading_anchor("TODO 3b: tiled `sgemm` (shared memory)"),
            "todo-3b-tiled-sgemm-shared-memory");
}

}  // namespace
}  // namespace gtl::grader
