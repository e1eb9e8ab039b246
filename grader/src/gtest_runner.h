// Runs the GoogleTest tests of one check, one segfault costing one test.
//
// Verdicts come from the grader's verdict channel (verdict_channel.h), never from what the
// program prints or the JSON it writes: the student's code runs in the same process. The stream
// and the JSON give only the messages (failure text, skip reasons). A forged record, or a test
// that the program listed but did not run, voids the whole run (run.error).
//
// GoogleTest writes its JSON report only when the program exits, so a crash or a timeout leaves
// nothing. The runner therefore (1) lists the tests the patterns select (--gtest_list_tests),
// (2) runs them in one process with --gtest_output=json while following the streamed
// "[ RUN      ]" / "[       OK ]" lines, and (3) when the process dies, blames the test that was
// running, keeps the outcomes the stream already showed, and reruns every test that had not
// started, each in its own process. Skip reasons come from the stream: Debian's GoogleTest 1.12
// writes no skip message into the JSON.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "process.h"

namespace gtl::grader {

enum class TestOutcome { kPassed, kFailed, kSkipped, kCrashed, kTimedOut };
const char* to_string(TestOutcome outcome);

struct TestResult {
  std::string name;  // "Suite.Name" (parameterised: "Prefix/Suite.Name/0")
  TestOutcome outcome = TestOutcome::kFailed;
  std::string message;  // failure text, skip reason or how the process died
};

struct GtestRun {
  std::vector<TestResult> tests;  // in listing order
  std::string error;              // set when the program could not be run or listed at all
  std::string output;             // captured output of the runs (capped), for the report
  std::string warning;            // set when the results could not be read from the channel
};

// "Suite.\n  Name\n  Other  # GetParam() = 3\n" -> {"Suite.Name", "Suite.Other"}.
std::vector<std::string> parse_gtest_list(const std::string& output);

// A --gtest_output=json report; nullopt (and *error) when it is truncated or not GoogleTest's.
std::optional<std::vector<TestResult>> parse_gtest_json(const std::string& text,
                                                        std::string* error = nullptr);

// Follows GoogleTest's console output line by line: which test runs, how each ended, and the
// lines each test printed (kept up to 4 KiB per test).
class GtestStream {
 public:
  void line(const std::string& text);
  const std::string& running() const { return running_; }  // "" between tests
  const std::vector<TestResult>& finished() const { return finished_; }
  std::string output_of(const std::string& test) const;
  // The reason GoogleTest printed after "Skipped" for `test` ("" when none).
  std::string skip_reason(const std::string& test) const;

 private:
  std::string running_;
  std::string current_output_;
  std::vector<TestResult> finished_;
  std::vector<std::pair<std::string, std::string>> outputs_;
};

// The lesson of one test's failure message, in one line, for the terminal's reason column: a
// crash's summary (crash_summary); else an exception's what() text, not GoogleTest's "unknown
// file / C++ exception with description"; else the test's own teaching message first, then
// GoogleTest's comparison ("Expected equality of these values: ..."). The full message stays in
// the HTML and JSON reports; this only chooses what a student reads first.
std::string failure_gist(const std::string& message);

// A sanitizer, emulator or UBSan report in one line that names the student's file as the student
// knows it ("02-cuda-kernels/reduce.cu:47: heap-buffer-overflow (read past the end of an array)"):
// the grader's private copy (<work>/impl/...) and the emulated copy (<name>_kernels/x.cu.cpp) are
// mapped back, and emulator frames are left out. "" when the output holds no such report.
std::string crash_summary(const std::string& output);

// A path as the student knows it: ".../impl/02-cuda-kernels/reduce.cu" and
// ".../starter/02-cuda-kernels/reduce.cu" -> "02-cuda-kernels/reduce.cu",
// ".../lab02_test_kernels/reduce.cu.cpp" -> "reduce.cu"; "" when it is not a student file.
std::string student_path(const std::string& path);

using Progress = std::function<void(const std::string&)>;

GtestRun run_gtest(const std::filesystem::path& binary, const std::vector<std::string>& patterns,
                   const RunLimits& limits, const std::filesystem::path& scratch,
                   const Progress& progress = {}, const RunExtras& extras = {});

}  // namespace gtl::grader
