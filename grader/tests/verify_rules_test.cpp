// verify's rules for one check (verify_rules.h). Above all: a CPU timing that measured a figure
// never fails verify, however a slower or busier machine moved it.
#include <gtest/gtest.h>

#include <cmath>

#include "verify_rules.h"

namespace gtl::grader {
namespace {

// A CPU speed check (full bar 20x, credit from 5x, 6 points) scored at `speedup`, as the grader
// scores it.
CheckResult cpu_timing(double speedup, bool requires_gpu = false) {
  CheckResult c;
  c.name = "allocator-speed";
  c.kind = CheckKind::kSpeed;
  c.requires_gpu = requires_gpu;
  c.max_score = 6;
  c.figure = speedup;
  c.threshold = 20;
  c.partial_from = 5;
  const double credit = speed_credit(speedup, 20, 5);
  c.score = 6 * credit;
  c.status = credit >= 1 ? Status::kPassed : credit > 0 ? Status::kPartial : Status::kFailed;
  return c;
}

CheckResult starter_at_zero() {
  return cpu_timing(1.0);
}

TEST(VerifyRules, ACpuTimingAboveItsFloorNeverFailsVerifyWhateverTheMachine) {
  // Every figure between the floor and far above the bar: what slower, busier or faster machines
  // measure. None may fail verify; those short of the full bar say so in a note with the figure.
  for (double speedup = 5.01; speedup < 200; speedup *= 1.07) {
    const TwinVerdict v = verify_twins("04", cpu_timing(speedup), starter_at_zero(), true);
    EXPECT_TRUE(v.problem.empty()) << "speedup " << speedup << ": " << v.problem;
    EXPECT_EQ(v.verdict.rfind("ok (CPU timing ", 0), 0u) << v.verdict;
    if (speedup < 20) {
      EXPECT_NE(v.note.find("short of the full bar 20x but above the floor 5x"), std::string::npos)
          << v.note;
    } else {
      EXPECT_TRUE(v.note.empty()) << v.note;
    }
  }
}

TEST(VerifyRules, ACpuTimingBelowItsFloorIsReportedNotFailed) {
  // A busy machine measured lab 05's CPU timing at a third of its floor: a figure is noise-prone,
  // never proof, so verify notes it with the figure and passes.
  for (double speedup : {0.5, 4.0, 5.0}) {
    const TwinVerdict v = verify_twins("04", cpu_timing(speedup), starter_at_zero(), true);
    EXPECT_TRUE(v.problem.empty()) << speedup << ": " << v.problem;
    EXPECT_EQ(v.verdict.rfind("ok (CPU timing ", 0), 0u) << v.verdict;
    EXPECT_NE(v.verdict.find("below the floor 5x here"), std::string::npos) << v.verdict;
    EXPECT_NE(v.note.find("below even the floor 5x"), std::string::npos) << v.note;
  }
}

TEST(VerifyRules, ACpuTimingWithoutAFigureFailsVerify) {
  // A benchmark that failed (no figure) or gave NaN measured nothing: a broken check, not noise.
  CheckResult nan = cpu_timing(std::nan(""));
  EXPECT_EQ(verify_twins("04", nan, starter_at_zero(), true).verdict, "SOLUTION LOSES POINTS")
      << "a NaN speedup is no figure at all";
  CheckResult failed = cpu_timing(0.5);
  failed.figure.reset();
  failed.reason = "benchmark 'BM_Flat' reported an error";
  const TwinVerdict v = verify_twins("04", failed, starter_at_zero(), true);
  EXPECT_EQ(v.verdict, "SOLUTION LOSES POINTS");
  EXPECT_NE(v.problem.find("reported an error"), std::string::npos) << v.problem;
}

TEST(VerifyRules, AGpuTimingKeepsItsFullBar) {
  // GPU speed checks run on a lent GPU, where calibrate re-derives the bar from the solution
  // measured there: verify asks for full marks.
  const TwinVerdict v =
      verify_twins("02", cpu_timing(15, /*requires_gpu=*/true), starter_at_zero(), true);
  EXPECT_EQ(v.verdict, "SOLUTION LOSES POINTS");
  EXPECT_EQ(v.problem.find("floor"), std::string::npos) << v.problem;
}

TEST(VerifyRules, TestAndMemoryChecksStillNeedFullMarks) {
  CheckResult test;
  test.name = "fixed-loop";
  test.kind = CheckKind::kTest;
  test.max_score = 12;
  test.score = 8;
  test.status = Status::kPartial;
  test.reason = "2 of 6 tests failed";
  EXPECT_EQ(verify_twins("04", test, CheckResult{}, true).verdict, "SOLUTION LOSES POINTS");
  CheckResult memory = test;
  memory.kind = CheckKind::kMemory;
  EXPECT_FALSE(verify_twins("04", memory, CheckResult{}, true).problem.empty());
}

TEST(VerifyRules, AStarterThatEarnsATodosCpuTimingIsStillCaught) {
  const TwinVerdict v = verify_twins("04", cpu_timing(40), cpu_timing(8), true);
  EXPECT_EQ(v.verdict, "CANNOT TELL STARTER FROM SOLUTION");
  EXPECT_TRUE(verify_twins("04", cpu_timing(40), cpu_timing(8), false).problem.empty())
      << "a check that covers no TODO may be earned by the starter";
}

TEST(VerifyRules, ASkippedCheckIsANoteNotAProblem) {
  CheckResult skipped = cpu_timing(0, true);
  skipped.status = Status::kSkipped;
  skipped.reason = "needs a GPU";
  const TwinVerdict v = verify_twins("02", skipped, skipped, true);
  EXPECT_TRUE(v.problem.empty());
  EXPECT_EQ(v.verdict, "not verified here: needs a GPU");
  EXPECT_NE(v.note.find("'allocator-speed' not verified here"), std::string::npos) << v.note;
}

TEST(VerifyRules, ATodoWhoseChecksAreAllWorthNothingIsAProblem) {
  const Rubric lab = parse_rubric(R"(lab: "07"
title: Pipelines
student_files: [a.cpp]
todos:
  - {id: "6", file: a.cpp, checks: [bubbles]}
  - {id: "7", file: a.cpp, checks: [interleaved, shown]}
checks:
  - {name: bubbles, type: test, points: 4, binary: t, tests: ["Bubbles.*"]}
  - {name: interleaved, type: test, points: 0, binary: t, tests: ["Interleaved.*"]}
  - {name: shown, type: test, points: 0, binary: t, tests: ["Shown.*"]}
)",
                                  "rubric.yaml", "07-pipelines");
  const std::vector<std::string> problems = todos_that_earn_nothing(lab);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "lab 07: TODO 7 earns nothing: every check it names is worth 0 points");
}

}  // namespace
}  // namespace gtl::grader
