// The judges of the real course (labs/NN-name/judge/), driven the way gtl-grade drives them
// (apply_judge), against what a forger whose channel the grader believed could hand them.
//
// Why here and not as a graded fixture submission: grading a submission of a real lab builds the
// training core in a fresh work folder (minutes); the forgery the judge must stop does not need
// that. A forger who stole the channel's key makes the grader read "every test passed" (the
// fixture forge_key proves it); what reaches the judge is then only the outputs folder, which the
// forger controls. So a check that the channel says passed with full marks (exactly what the forged
// channel produces) must still score 0 when the outputs are not the right ones for the grading
// seed: none at all, the outputs of a public run (seed 1) replayed, or one value changed. And the
// outputs the lab's own tests record must be accepted whenever those tests pass.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "judge.h"
#include "process.h"
#include "scoring.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

const fs::path kWork = GTL_GRADER_JUDGE_WORK;

// What the forged channel gives a check: every test passed, full marks.
CheckResult forged_pass(const std::string& check, double points) {
  CheckResult r;
  r.name = check;
  r.status = Status::kPassed;
  r.score = r.max_score = points;
  r.reason = "all tests passed";
  return r;
}

RunExtras outputs_env(const fs::path& outputs, int seed) {
  RunExtras extras;
  extras.env = {"GTL_JUDGE_OUTPUTS=" + outputs.string(), "GTL_TEST_SEED=" + std::to_string(seed)};
  return extras;
}

// Runs `program` on `filter` recording into a fresh `outputs` folder; true when its tests pass.
bool record(const std::string& program, const std::string& filter, const fs::path& outputs,
            int seed) {
  fs::remove_all(outputs);
  fs::create_directories(outputs);
  const RunResult r =
      run_process({program, "--gtest_filter=" + filter}, {}, {}, {}, outputs_env(outputs, seed));
  return r.ok();
}

// The check after the judge saw `outputs` under `seed`.
CheckResult judged(const std::string& check, const fs::path& outputs, int seed) {
  CheckResult r = forged_pass(check, 5);
  apply_judge(r, GTL_LAB01_JUDGE, {}, outputs_env(outputs, seed));
  return r;
}

struct Lab01Check {
  const char* check;
  const char* program;
  const char* filter;
};
const std::vector<Lab01Check> kChecks = {
    {"vector-add-cpu", GTL_LAB01_CPU_TEST, "VectorAddCpu.*"},
    {"choose-device", GTL_LAB01_CPU_TEST, "ChooseDevice.*"},
    {"vector-add-emulated", GTL_LAB01_EMULATED_TEST, "EmulatedVectorAdd.*"},
    {"stream-pipeline-emulated", GTL_LAB01_EMULATED_TEST, "EmulatedStreamPipeline.*"}};

TEST(Lab01Judge, AcceptsWhatPassingTestsRecordUnderTheGradingSeed) {
  for (const auto& c : kChecks) {
    const fs::path outputs = kWork / "accepted" / c.check;
    if (!record(c.program, c.filter, outputs, 4242)) {
      ADD_FAILURE() << c.check << ": the lab's own tests fail in this build (" << c.program
                    << "), so there is nothing a judge should accept";
      continue;
    }
    const CheckResult r = judged(c.check, outputs, 4242);
    EXPECT_EQ(r.score, 5.0) << c.check << ": the judge must accept the outputs of tests that "
                            << "pass under the same seed; it said: " << r.reason;
  }
}

TEST(Lab01Judge, AForgedPassWithoutTheOutputsScoresZero) {
  for (const auto& c : kChecks) {
    const fs::path empty = kWork / "empty" / c.check;
    fs::remove_all(empty);
    fs::create_directories(empty);
    const CheckResult r = judged(c.check, empty, 4242);
    EXPECT_EQ(r.score, 0.0) << c.check << ": a channel that says 'passed' while the tests "
                            << "recorded nothing must score 0";
    EXPECT_NE(r.reason.find("recorded no outputs"), std::string::npos) << r.reason;
  }
}

TEST(Lab01Judge, OutputsReplayedFromAPublicRunScoreZero) {
  // A student can run the tests at seed 1 (the default) with a finished classmate's code and keep
  // the outputs; under the grading seed the seeded inputs differ and the judge sees it.
  for (const auto& c : kChecks) {
    if (std::string(c.check) == "choose-device") continue;  // its outputs are the same machine-wide
    const fs::path outputs = kWork / "replayed" / c.check;
    ASSERT_TRUE(record(c.program, c.filter, outputs, 1)) << c.check;
    const CheckResult r = judged(c.check, outputs, 4242);
    EXPECT_EQ(r.score, 0.0) << c.check << ": outputs recorded under seed 1 replayed under seed "
                            << "4242 must be rejected";
    EXPECT_NE(r.reason.find("the judge lab01_judge (built from the course alone) rejects"),
              std::string::npos)
        << r.reason;
  }
}

TEST(Lab01Judge, OneWrongOutputScoresZeroAndIsNamed) {
  const fs::path outputs = kWork / "tampered";
  ASSERT_TRUE(record(GTL_LAB01_CPU_TEST, "VectorAddCpu.*", outputs, 4242));
  const fs::path file = outputs / "VectorAddCpu.SeededSizesAndAlignments.txt";
  std::vector<std::string> lines;
  {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 4u) << "one digest per seeded round";
  lines[2] = "12345";
  {
    std::ofstream out(file, std::ios::trunc);
    for (const auto& line : lines) out << line << "\n";
  }
  const CheckResult r = judged("vector-add-cpu", outputs, 4242);
  EXPECT_EQ(r.score, 0.0);
  EXPECT_NE(r.reason.find("c of round 2"), std::string::npos)
      << "the rejection names the round: " << r.reason;
}

}  // namespace
}  // namespace gtl::grader
