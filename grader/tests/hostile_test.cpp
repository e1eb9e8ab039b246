// Hostile submissions (issue 13): code that does not solve a TODO and tries to earn its points
// anyway. Each fixture under fixtures/submissions/forge_* (and the others named below) leaves the
// sum TODO open and solves prefix_sums: every sum check must score 0 and every prefix check full
// marks, whatever the forgery. docs/grader.md, "Trust model", says what each one proves.
#include "e2e_support.h"

namespace gtl::grader {
namespace {

// The sum TODO is open: these checks must score 0. The prefix TODO is solved: full marks.
void expect_sum_zero_prefix_full(const Graded& g) {
  ASSERT_EQ(g.run.exit_code, 0) << g.run.output;
  for (const char* name : {"sum-correct", "sum-speed", "sum-memory", "sum-hidden"}) {
    EXPECT_EQ(g.score(name), 0.0) << name
                                  << " covers the open sum TODO, yet scored: " << g.reason(name);
    EXPECT_EQ(g.status(name), "failed") << name << ": " << g.reason(name);
  }
  EXPECT_EQ(g.score("prefix-correct"), 3.0)
      << "prefix_sums is solved: " << g.reason("prefix-correct");
  EXPECT_EQ(g.score("prefix-memory"), 1.0) << g.reason("prefix-memory");
  EXPECT_EQ(g.report["score"], 4.0) << "3 + 1 for prefix sums, nothing for sum";
  EXPECT_EQ(g.report["max_score"], 13.0) << "no forged skip takes points out of the total";
  EXPECT_EQ(g.report["skipped_points"], 3.0) << "only the requires: gpu check is counted apart";
  EXPECT_EQ(g.gradescope["score"], 4.0);
}

TEST(HostileSubmission, PrintedGoogleTestLinesEarnNothing) {
  const Graded g = grade_submission_named("forge_stdout");
  expect_sum_zero_prefix_full(g);
  EXPECT_NE(g.reason("sum-correct").find("in the middle of this test"), std::string::npos)
      << "the test that exited early is blamed, whatever it printed: " << g.reason("sum-correct");
}

TEST(HostileSubmission, ARewrittenJsonReportEarnsNothing) {
  const Graded g = grade_submission_named("forge_json");
  expect_sum_zero_prefix_full(g);
  EXPECT_NE(g.reason("sum-correct").find("Sum.Small failed"), std::string::npos)
      << "the failures come from the verdict channel, not the JSON: " << g.reason("sum-correct");
}

TEST(HostileSubmission, SelfReportedSkipsScoreZero) {
  const Graded g = grade_submission_named("forge_skip");
  expect_sum_zero_prefix_full(g);
}

TEST(HostileSubmission, AForgedListingCannotDropExpectedTests) {
  const Graded g = grade_submission_named("forge_listing");
  expect_sum_zero_prefix_full(g);
  EXPECT_NE(g.reason("sum-correct").find("every expected test must run"), std::string::npos)
      << g.reason("sum-correct");
}

TEST(HostileSubmission, ADaemonThatLeftItsGroupDiesBeforeTheReportsAreWritten) {
  Graded g;
  g.out = kWork / "out" / "daemon";
  fs::remove_all(g.out);
  // gtl-grade runs under a shell that waits 3 s after it exits: a daemon that escaped the grader
  // rewrites results.json then. (This test's own run_process is a subreaper too: run directly, it
  // would kill such a daemon the moment gtl-grade exits and hide the escape.)
  const std::string grade = std::string("'") + GTL_GRADE_EXE + "' grade --submission '" +
                            (kFixtures / "submissions/daemon").string() + "' --course '" +
                            kCourse.string() + "' --work '" + (kWork / "work").string() +
                            "' --out '" + g.out.string() + "' --cpu-only -q";
  RunLimits limits;
  limits.timeout_s = 240;
  limits.output_bytes = 1 << 20;
  g.run = run_process({"sh", "-c", grade + "; code=$?; sleep 3; exit $code"}, limits);
  ASSERT_TRUE(fs::exists(g.out / "results.json")) << g.run.output;
  g.report = nlohmann::json::parse(slurp(g.out / "report.json"));
  g.gradescope = nlohmann::json::parse(slurp(g.out / "results.json"));
  EXPECT_EQ(g.run.stray_processes, 0)
      << "gtl-grade must kill and reap every process it started before it exits";
  expect_sum_zero_prefix_full(g);
}

}  // namespace
}  // namespace gtl::grader
