// Hostile submissions: code that does not solve a TODO and tries to earn its points
// anyway. Each fixture under fixtures/submissions/forge_* (and the others named below) leaves the
// sum TODO open and solves prefix_sums: every sum check must score 0 and every prefix check full
// marks, whatever the forgery. docs/grader.md, "Trust model", says what each one proves.
#include <map>

#include "e2e_support.h"

namespace gtl::grader {
namespace {

// The hidden test program of the fixture lab in the build of `work`.
fs::path find_hidden_test(const fs::path& work) {
  return work / "build/labs/01-sum/lab01_sum_hidden_test";
}

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

TEST(HostileSubmission, RecordsWrittenWithoutTheKeyVoidTheRun) {
  const Graded g = grade_submission_named("forge_channel");
  expect_sum_zero_prefix_full(g);
  EXPECT_NE(g.reason("sum-correct").find("forged record on the grader's verdict channel"),
            std::string::npos)
      << "the channel's key was gone before the student's initialiser ran: "
      << g.reason("sum-correct");
}

TEST(HostileSubmission, AForgedChannelStillFailsTheJudge) {
  // The one forgery the channel cannot see: code that steals its key before the listener. The
  // sum check's judge recomputes the seeded sums without the student's code.
  const Graded g = grade_submission_named("forge_key");
  expect_sum_zero_prefix_full(g);
  EXPECT_NE(g.reason("sum-correct")
                .find("the judge lab01_sum_judge (built from the course alone) "
                      "rejects the outputs"),
            std::string::npos)
      << g.reason("sum-correct");
  EXPECT_NE(g.reason("sum-correct").find("4/4 tests passed"), std::string::npos)
      << "the forged channel did claim every test passed: " << g.reason("sum-correct");
}

TEST(HostileSubmission, BenchmarkTimesWrittenIntoTheJsonAreRejected) {
  // sum() is right but far too slow for the speed bar; at exit the benchmark program rewrites
  // its JSON so that the baseline looks 1000 times slower. The figures then claim more measured
  // time than the process ran, by the grader's own clock: the speed check scores 0.
  const Graded g = grade_submission_named("forge_bench");
  ASSERT_EQ(g.run.exit_code, 0) << g.run.output;
  EXPECT_EQ(g.score("sum-speed"), 0.0)
      << "a forged baseline time earned: " << g.reason("sum-speed");
  EXPECT_NE(g.reason("sum-speed").find("its figures were not measured"), std::string::npos)
      << "the reason names the forgery: " << g.reason("sum-speed");
  EXPECT_EQ(g.score("sum-correct"), 4.0) << "sum() is right: " << g.reason("sum-correct");
  EXPECT_EQ(g.score("prefix-correct"), 3.0) << g.reason("prefix-correct");
}

TEST(HostileSubmission, ADaemonThatLeftItsGroupDiesBeforeTheReportsAreWritten) {
  Graded g;
  g.out = kWork / "out" / "daemon";
  fs::remove_all(g.out);
  // gtl-grade runs under a shell that waits 3 s after it exits: a daemon that escaped the grader
  // rewrites results.json then. (This test's own run_process is a subreaper too: run directly, it
  // would kill such a daemon the moment gtl-grade exits and hide the escape.) Without the
  // sandbox: its PID namespace would hide the grader from the daemon, and this tests the
  // subreaper, which holds with or without it. (work-unsandboxed: without the sandbox the
  // course is graded from a copy, another build.)
  const std::string grade = std::string("GTL_GRADER_NO_SANDBOX=1 '") + GTL_GRADE_EXE +
                            "' grade --submission '" + (kFixtures / "submissions/daemon").string() +
                            "' --course '" + kCourse.string() + "' --work '" +
                            (kWork / "work-unsandboxed").string() + "' --out '" + g.out.string() +
                            "' --cpu-only -q";
  RunLimits limits;
  limits.timeout_s = 240;
  limits.output_bytes = 1 << 20;
  g.run = run_process({"sh", "-c", grade + "; code=$?; sleep 3; exit $code"}, limits);
  ASSERT_TRUE(fs::exists(g.out / "results.json")) << g.run.output;
  g.report = nlohmann::json::parse(read_file(g.out / "report.json"));
  g.gradescope = nlohmann::json::parse(read_file(g.out / "results.json"));
  EXPECT_EQ(g.run.stray_processes, 0)
      << "gtl-grade must kill and reap every process it started before it exits";
  expect_sum_zero_prefix_full(g);
}

TEST(HostileSubmission, CodeRightOnlyForTheFixedShapesFailsTheSeededOnes) {
  const Graded g = gtl_grade({"grade", "--seed", "4242", "--submission",
                              (kFixtures / "submissions/fixed_shapes").string()},
                             "fixed_shapes");
  expect_sum_zero_prefix_full(g);
  EXPECT_EQ(g.report["seed"], "4242") << "the report records the grading seed";
  EXPECT_NE(g.gradescope["output"].get<std::string>().find("GTL_TEST_SEED=4242"), std::string::npos)
      << "the student is told how to repeat the seeded shapes";
  const std::string details = g.check("sum-correct")["details"];
  EXPECT_NE(details.find("seed 4242 (GTL_TEST_SEED=4242 repeats it)"), std::string::npos)
      << "the failing test names the shape and the seed: " << details;
}

TEST(HostileSubmission, CodeRightOnlyUnderTheTestHarnessLosesItsTestPoints) {
  const Graded g = grade_submission_named("harness_detect");
  expect_sum_zero_prefix_full(g);
  EXPECT_NE(g.reason("sum-correct").find("found a wrong result"), std::string::npos)
      << "the tests passed, but the benchmark of the same TODO found a wrong result: "
      << g.reason("sum-correct");
}

TEST(HostileSubmission, AForbiddenReferenceReachedWithoutItsNameRefusesToRun) {
  // sum() calls the core's reference sum through a function pointer a core helper in another file
  // hands out (fixture::reduction): its object names no forbidden symbol, so the scan passes it.
  // The runtime guard does not: while a test or benchmark calls sum(), the reference ends the
  // program, naming itself and the student's call.
  const Graded g = grade_submission_named("forbidden_indirect");
  expect_sum_zero_prefix_full(g);
  const std::string guard =
      "reference guard: the core's fixture::reference_sum ran while the program was calling the "
      "student's sum() (TODO sum)";
  for (const char* name : {"sum-correct", "sum-hidden"}) {
    EXPECT_EQ(g.reason(name).find("uses the core's"), std::string::npos)
        << name << ": the scan cannot see this path, the runtime guard must: " << g.reason(name);
    EXPECT_NE(g.check(name)["details"].get<std::string>().find(guard), std::string::npos)
        << name << ": the test's last output names the reference and the call, expected \"" << guard
        << "\", got:\n"
        << g.check(name)["details"];
  }
  for (const char* name : {"sum-speed", "sum-memory"})
    EXPECT_NE(g.check(name)["details"].get<std::string>().find(guard), std::string::npos)
        << name << ": the benchmark stops the reference too; got:\n"
        << g.check(name)["details"];
}

TEST(HostileSubmission, CodeWrongOnlyWhenBenchmarkedScoresZeroForSpeed) {
  // sum() recognises the benchmark program by its name and sums a quarter of the elements there
  // (four times "faster"); under the tests it is right. The benchmark checks what it computed.
  const Graded g = grade_submission_named("bench_detect");
  expect_sum_zero_prefix_full(g);
  EXPECT_NE(g.reason("sum-speed").find("reported an error: wrong result"), std::string::npos)
      << "the speed check fails on the benchmark's own verification, expected \"reported an "
         "error: wrong result\", got: "
      << g.reason("sum-speed");
  EXPECT_NE(g.reason("sum-correct").find("the benchmark of TODO sum found a wrong result"),
            std::string::npos)
      << "the tests passed, but a result wrong in the benchmark voids them: "
      << g.reason("sum-correct");
}

// The course as it is in the repository, file by file (to tell whether grading changed it).
std::map<std::string, std::string> snapshot(const fs::path& course) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(course))
    if (e.is_regular_file()) files[fs::relative(e.path(), course).string()] = read_file(e.path());
  return files;
}

bool sandboxed(const Graded& g) {
  return g.report.value("sandbox", "") == "bubblewrap";
}

TEST(HostileSubmission, TheSolutionIsOutOfReach) {
  // Under the sandbox solution/ is an empty folder; without it the course is graded from a copy
  // without solution/. Either way the include finds nothing and sum stays unsolved.
  const Graded g = grade_submission_named("include_solution");
  expect_sum_zero_prefix_full(g);
  const Graded copy =
      gtl_grade_in({"grade", "--submission", (kFixtures / "submissions/include_solution").string()},
                   "include_solution_unsandboxed", kCourse, kWork / "work-unsandboxed",
                   {"GTL_GRADER_NO_SANDBOX=1"});
  EXPECT_EQ(copy.report["sandbox"], "none: GTL_GRADER_NO_SANDBOX=1");
  EXPECT_NE(copy.gradescope["output"].get<std::string>().find("without a sandbox"),
            std::string::npos)
      << "the student and instructor are told that no sandbox ran";
  expect_sum_zero_prefix_full(copy);
}

TEST(HostileSubmission, IncludingAFileOutsideTheStudentTreeIsNamedAndFailsTheLab) {
  // Not a sandbox matter: the hidden test's header is part of the course the build reads.
  const Graded g = grade_submission_named("include_hidden");
  ASSERT_EQ(g.run.exit_code, 0) << g.run.output;
  EXPECT_EQ(g.report["score"], 0.0) << "every check of the lab fails";
  const std::string why = g.reason("sum-hidden");
  EXPECT_NE(why.find("01-sum/sum.cpp includes labs/01-sum/hidden/sum_hidden_cases.h"),
            std::string::npos)
      << "the reason names the student file and what it included: " << why;
  EXPECT_EQ(g.reason("prefix-correct"), why);
}

TEST(HostileSubmission, ATestProgramCannotChangeTheCourseOrTheBuild) {
  // Graded against a copy of the fixture course: a grader that fails this would corrupt it.
  const fs::path course = kWork / "tamper-course";
  copy_fixture_course(course);
  const auto before = snapshot(course);
  const fs::path work = kWork / "tamper-work";
  const Graded g =
      gtl_grade_in({"grade", "--submission", (kFixtures / "submissions/tamper_course").string()},
                   "tamper", course, work);
  if (!sandboxed(g)) GTEST_SKIP() << "no sandbox on this machine: " << g.report["sandbox"];
  expect_sum_zero_prefix_full(g);
  EXPECT_TRUE(snapshot(course) == before)
      << "a test program changed the pristine course (its tests or rubric)";
  EXPECT_NE(read_file(find_hidden_test(work)).substr(0, 4), "#!/b")
      << "a test program rewrote another test program in the build";
}

// A refused submission: exit code 4, every check 0 with a reason naming the link.
void expect_refused_for_link(const Graded& g, const std::string& link) {
  EXPECT_EQ(g.run.exit_code, 4) << g.run.output;
  EXPECT_EQ(g.report["score"], 0.0) << "nothing is graded through a link";
  const std::string why = g.reason("sum-correct");
  EXPECT_NE(why.find("symbolic link"), std::string::npos) << why;
  EXPECT_NE(why.find(link), std::string::npos) << "the reason names the link: " << why;
  EXPECT_EQ(g.reason("prefix-correct"), why);
  EXPECT_NE(g.gradescope["output"].get<std::string>().find(link), std::string::npos);
}

TEST(HostileSubmission, ASubmissionHoldingASymbolicLinkIsRefused) {
  // The grader copies a submission with its own rights, outside the sandbox: a link to the
  // solution would have been copied as the student's file and scored full marks.
  expect_refused_for_link(grade_submission_named("symlink_solution"),
                          "01-sum/sum.cpp -> ../../../course/solution/01-sum/sum.cpp");
  // Through /proc/self (the grader's own root, environment, descriptors): a folder linked there.
  const fs::path proc = kWork / "symlink_proc";
  fs::remove_all(proc);
  fs::create_directories(proc / "notes");
  fs::create_symlink("/proc/self/environ", proc / "notes" / "environ");
  fs::create_symlink("/proc/self/root" + fs::absolute(kCourse / "solution/01-sum").string(),
                     proc / "01-sum");
  const Graded g = gtl_grade({"grade", "--submission", proc.string()}, "symlink_proc");
  expect_refused_for_link(g, " -> /proc/self/");
  EXPECT_EQ(g.gradescope["output"].get<std::string>().find("PATH="), std::string::npos)
      << "nothing of the grader's environment reaches the report";
}

TEST(HostileSubmission, TheGraderNeverWritesThroughALinkInAScratchFolder) {
  // The test and benchmark programs plant links to the course's rubric where the grader (and the
  // compiler of the forbidden-symbol check) write later. Graded against a copy of the course.
  const fs::path course = kWork / "scratch-link-course";
  copy_fixture_course(course);
  const auto before = snapshot(course);
  const Graded g =
      gtl_grade_in({"grade", "--submission", (kFixtures / "submissions/scratch_symlink").string()},
                   "scratch_symlink", course, kWork / "scratch-link-work");
  expect_sum_zero_prefix_full(g);
  EXPECT_TRUE(snapshot(course) == before) << "the grader wrote through a planted link";
  // Without the sandbox the programs can plant the links beside their own folder too: the grader
  // empties its folders before it writes there. (It grades from a copy of the course then.)
  const fs::path work = kWork / "scratch-link-unsandboxed";
  const Graded u =
      gtl_grade_in({"grade", "--submission", (kFixtures / "submissions/scratch_symlink").string()},
                   "scratch_symlink_unsandboxed", course, work, {"GTL_GRADER_NO_SANDBOX=1"});
  expect_sum_zero_prefix_full(u);
  EXPECT_EQ(read_file(work / "course/labs/01-sum/rubric.yaml"),
            read_file(kCourse / "labs/01-sum/rubric.yaml"))
      << "the grader wrote through a link planted beside a scratch folder";
}

TEST(HostileSubmission, MemoryThatNoResidentSetShowsCountsAgainstTheBound) {
  // sum() is right but holds 640 MiB (the bound is 512) in an unmapped memfd and a /dev/shm file:
  // no RSS shows them. The bound counts memory files too; the sandbox's /dev/shm is private, so
  // the file it leaves behind goes with the sandbox.
  const fs::path host_file = "/dev/shm/gtl-hostile-memory_hog";
  fs::remove(host_file);
  const Graded g = grade_submission_named("memory_hog");
  if (!sandboxed(g)) GTEST_SKIP() << "no sandbox on this machine: " << g.report["sandbox"];
  expect_sum_zero_prefix_full(g);
  for (const char* name : {"sum-correct", "sum-speed", "sum-memory", "sum-hidden"})
    EXPECT_NE(g.reason(name).find("memory limit of 512 MiB"), std::string::npos)
        << name << ": " << g.reason(name);
  EXPECT_NE(g.check("sum-correct")["details"].get<std::string>().find("MiB in memory files"),
            std::string::npos)
      << "the details say where the memory was: " << g.check("sum-correct")["details"];
  EXPECT_FALSE(fs::exists(host_file)) << "the program wrote into the machine's own /dev/shm";
}

TEST(HostileSubmission, TestsThatAllHangAreBoundedByTheTimeCaps) {
  // sum() never returns: each of the 4 Sum tests would time out (5 s) and be rerun alone, 20 s
  // for one check. The fixture's check cap (12 s) stops the reruns.
  const Graded g = grade_submission_named("hang_everywhere");
  expect_sum_zero_prefix_full(g);
  const std::string why = g.reason("sum-correct");
  EXPECT_NE(why.find("the check's time cap of 12 s (limits.check_timeout_s) was reached"),
            std::string::npos)
      << why;
  EXPECT_NE(g.check("sum-correct")["details"].get<std::string>().find(
                "not run: the time cap was reached"),
            std::string::npos)
      << "a test left when the cap came is not run: " << g.check("sum-correct")["details"];

  // The lab's cap: a copy of the course with 20 s for every check of the lab. sum-correct (12 s)
  // and prefix-correct run; the benchmark of sum-speed is stopped at 20 s, the rest never run.
  const fs::path course = kWork / "lab-cap-course";
  copy_fixture_course(course);
  std::string rubric = read_file(course / "labs/01-sum/rubric.yaml");
  rubric.replace(rubric.find("lab_timeout_s: 60"), 17, "lab_timeout_s: 20");
  std::ofstream(course / "labs/01-sum/rubric.yaml") << rubric;
  const Graded capped =
      gtl_grade_in({"grade", "--submission", (kFixtures / "submissions/hang_everywhere").string()},
                   "hang_everywhere_lab_cap", course, kWork / "lab-cap-work");
  ASSERT_EQ(capped.run.exit_code, 0) << capped.run.output;
  EXPECT_EQ(capped.score("prefix-correct"), 3.0) << capped.reason("prefix-correct");
  const std::string cap = "the lab's time cap of 20 s (limits.lab_timeout_s) was reached";
  EXPECT_NE(capped.reason("sum-speed").find(cap + " during this check"), std::string::npos)
      << capped.reason("sum-speed");
  for (const char* name : {"sum-memory", "prefix-memory", "sum-hidden"}) {
    EXPECT_EQ(capped.reason(name), cap + ": the remaining checks were not run") << name;
    EXPECT_EQ(capped.score(name), 0.0) << name;
  }
  EXPECT_EQ(capped.report["score"], 3.0);
}

}  // namespace
}  // namespace gtl::grader
