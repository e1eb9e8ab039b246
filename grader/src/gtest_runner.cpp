// GoogleTest listing, JSON parsing, stream following and crash-isolating reruns.
#include "gtest_runner.h"
#include "files.h"

#include "verdict_channel.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxTestOutput = 4096;

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// "[  FAILED  ] Suite.Name, where GetParam() = 1 (3 ms)" -> "Suite.Name"
std::string test_name_after(const std::string& line, std::size_t tag_end) {
  std::string rest = trim(line.substr(tag_end));
  const auto cut = rest.find_first_of(" ,");
  return cut == std::string::npos ? rest : rest.substr(0, cut);
}

std::string join_patterns(const std::vector<std::string>& patterns) {
  std::string filter;
  for (const auto& p : patterns) filter += (filter.empty() ? "" : ":") + p;
  return filter;
}

}  // namespace

const char* to_string(TestOutcome outcome) {
  switch (outcome) {
    case TestOutcome::kPassed:
      return "passed";
    case TestOutcome::kFailed:
      return "failed";
    case TestOutcome::kSkipped:
      return "skipped";
    case TestOutcome::kCrashed:
      return "crashed";
    case TestOutcome::kTimedOut:
      return "timeout";
  }
  return "?";
}

std::vector<std::string> parse_gtest_list(const std::string& output) {
  std::vector<std::string> tests;
  std::string suite;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    const std::string code = trim(line.substr(0, line.find('#')));
    if (code.empty()) continue;
    if (line[0] != ' ') {
      // A suite line ends with '.'; anything else (a banner, a warning) resets the suite.
      suite = code.back() == '.' ? code : "";
    } else if (!suite.empty()) {
      tests.push_back(suite + code);
    }
  }
  return tests;
}

std::optional<std::vector<TestResult>> parse_gtest_json(const std::string& text,
                                                        std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<std::vector<TestResult>> {
    if (error) *error = why;
    return std::nullopt;
  };
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return fail("the GoogleTest JSON report is truncated or not JSON");
  if (!j.is_object() || !j.contains("testsuites") || !j["testsuites"].is_array())
    return fail("the JSON is not a GoogleTest report (no 'testsuites' list)");
  std::vector<TestResult> out;
  for (const auto& suite : j["testsuites"]) {
    if (!suite.is_object() || !suite.contains("testsuite") || !suite["testsuite"].is_array())
      return fail("a test suite in the GoogleTest report has no 'testsuite' list");
    const std::string suite_name = suite.value("name", "");
    for (const auto& t : suite["testsuite"]) {
      if (!t.is_object()) return fail("a test entry in the GoogleTest report is not an object");
      if (t.value("status", "RUN") == "NOTRUN") continue;  // DISABLED_ tests
      TestResult r;
      r.name = suite_name + "." + t.value("name", "?");
      const std::string result = t.value("result", "COMPLETED");
      std::string failures;
      if (t.contains("failures") && t["failures"].is_array()) {
        for (const auto& f : t["failures"]) {
          if (f.is_object()) failures += f.value("failure", "") + "\n";
        }
      }
      if (!failures.empty()) {
        r.outcome = TestOutcome::kFailed;
        r.message = trim(failures);
      } else if (result == "SKIPPED") {
        r.outcome = TestOutcome::kSkipped;
      } else {
        r.outcome = TestOutcome::kPassed;
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

void GtestStream::line(const std::string& text) {
  auto finish = [&](TestOutcome outcome, std::size_t tag_end) {
    const std::string name = test_name_after(text, tag_end);
    if (name != running_) return;  // the summary at the end repeats "[  FAILED  ]" lines
    TestResult r{name, outcome, ""};
    if (outcome == TestOutcome::kFailed) r.message = trim(current_output_);
    finished_.push_back(r);
    outputs_.emplace_back(name, current_output_);
    running_.clear();
    current_output_.clear();
  };
  if (text.rfind("[ RUN      ]", 0) == 0) {
    running_ = test_name_after(text, 12);
    current_output_.clear();
  } else if (text.rfind("[       OK ]", 0) == 0) {
    finish(TestOutcome::kPassed, 12);
  } else if (text.rfind("[  FAILED  ]", 0) == 0) {
    finish(TestOutcome::kFailed, 12);
  } else if (text.rfind("[  SKIPPED ]", 0) == 0) {
    finish(TestOutcome::kSkipped, 12);
  } else if (!running_.empty() && current_output_.size() < kMaxTestOutput) {
    current_output_ += text.substr(0, kMaxTestOutput - current_output_.size()) + "\n";
  }
}

std::string GtestStream::output_of(const std::string& test) const {
  if (test == running_) return current_output_;
  for (const auto& [name, out] : outputs_)
    if (name == test) return out;
  return "";
}

std::string GtestStream::skip_reason(const std::string& test) const {
  // GoogleTest prints "file:line: Skipped" and then the message given to GTEST_SKIP() << ...
  const std::string out = output_of(test);
  const auto at = out.find(": Skipped\n");
  return trim(at == std::string::npos ? out : out.substr(at + 10));
}

GtestRun run_gtest(const fs::path& binary, const std::vector<std::string>& patterns,
                   const RunLimits& limits, const fs::path& scratch, const Progress& progress,
                   const RunExtras& base_extras) {
  GtestRun run;
  if (!fs::exists(binary)) {
    run.error = "test program " + binary.filename().string() + " was not built";
    return run;
  }
  const std::string filter = join_patterns(patterns);
  fs::create_directories(scratch);  // the programs run there (their working directory)
  const RunResult listed =
      run_process({binary.string(), "--gtest_list_tests", "--gtest_filter=" + filter}, limits,
                  scratch, {}, base_extras);
  if (!listed.ok()) {
    run.error = "could not list the tests of " + binary.filename().string() + ": " +
                listed.describe(limits.timeout_s);
    run.output = listed.output;
    return run;
  }
  const std::vector<std::string> listed_tests = parse_gtest_list(listed.output);
  if (listed_tests.empty()) {
    run.error = "no test of " + binary.filename().string() + " matches " + filter;
    return run;
  }

  std::map<std::string, TestResult> results;
  std::vector<std::string> pending = listed_tests;
  bool first = true;
  const fs::path json_path = scratch / (binary.filename().string() + ".gtest.json");
  // A program built with the verdict listener must report through it; one without (a course
  // not set up for it) is read the old way, from its JSON and output, and the report says so.
  const bool channel = has_verdict_listener(binary);
  if (!channel)
    run.warning = binary.filename().string() +
                  " has no verdict channel: its results come from its own output and JSON, "
                  "which code in the program can forge";
  RunExtras extras = base_extras;
  extras.verdict_channel = channel;
  std::string expected_seed = "1";  // gtl_test_seed.h: 1 when GTL_TEST_SEED is not given
  for (const auto& e : extras.env)
    if (e.rfind("GTL_TEST_SEED=", 0) == 0) expected_seed = e.substr(14);
  while (!pending.empty()) {
    if (Clock::now() >= limits.deadline) {
      // A time cap (the check's or the lab's) was reached: no more reruns, whatever is left.
      for (const auto& name : pending)
        results[name] = {name, TestOutcome::kTimedOut,
                         "not run: the time cap was reached before this test could run"};
      break;
    }
    // The first run takes every selected test; after a crash each remaining test runs alone.
    const std::string run_filter = first ? filter : pending.front();
    const bool whole = first;
    first = false;
    fs::remove(json_path);
    GtestStream stream;
    if (progress && run_filter != filter) progress("rerunning " + run_filter + " alone");
    const RunResult r = run_process(
        {binary.string(), "--gtest_filter=" + run_filter, "--gtest_color=no",
         "--gtest_output=json:" + json_path.string()},
        limits, scratch, [&](const std::string& l) { stream.line(l); }, extras);
    run.output += r.output;
    const std::string how = r.describe(limits.timeout_s);
    const TestOutcome dead_outcome = r.timed_out ? TestOutcome::kTimedOut : TestOutcome::kCrashed;

    // What finished, and which test was running when the program stopped.
    std::vector<TestResult> finished;
    std::string culprit;
    bool died_before_tests = false;
    std::string json_error;
    if (channel) {
      const Verdicts v = parse_verdicts(r.verdicts, r.verdict_key);
      if (v.forged) {
        run.error = "the test program wrote a forged record on the grader's verdict channel (" +
                    v.forged_line + "): no result of this run can be trusted";
        return run;
      }
      if (v.hello && v.seed != expected_seed) {
        run.error = "the test program's tests used the grading seed '" + v.seed +
                    "', not the one the grader gave it ('" + expected_seed + "')";
        return run;
      }
      if (whole && v.hello) {
        // The plan must be exactly the listing: a program that lists one set of tests and runs
        // another (or fewer) does not get the tests it left out counted.
        std::vector<std::string> plan = v.plan, expected = listed_tests;
        std::sort(plan.begin(), plan.end());
        std::sort(expected.begin(), expected.end());
        if (plan != expected) {
          run.error = "the test program listed " + std::to_string(expected.size()) +
                      " tests but planned to run " + std::to_string(plan.size()) +
                      ": every expected test must run";
          return run;
        }
      }
      for (const auto& [name, outcome] : v.outcomes) {
        TestResult t{name, TestOutcome::kPassed, ""};
        if (outcome == "failed") t = {name, TestOutcome::kFailed, trim(stream.output_of(name))};
        if (outcome == "skipped") t = {name, TestOutcome::kSkipped, stream.skip_reason(name)};
        finished.push_back(t);
      }
      culprit = v.running;
      died_before_tests = !v.hello || (v.outcomes.empty() && v.running.empty() && !v.ended);
      if (v.ended && culprit.empty() && v.hello) {
        // RUN_ALL_TESTS returned, yet a selected test has no outcome: it did not run.
        for (const auto& name : pending) {
          const bool selected = whole || name == run_filter;
          if (selected && !v.outcomes.count(name)) {
            run.error = "test " + name + " was expected to run and did not: every expected " +
                        "test must run";
            return run;
          }
        }
      }
    } else {
      const bool exited = !r.timed_out && !r.memory_exceeded && r.signal == 0 &&
                          (r.exit_code == 0 || r.exit_code == 1);
      std::optional<std::vector<TestResult>> parsed;
      if (exited && fs::exists(json_path))
        parsed = parse_gtest_json(read_file_nofollow(json_path).value_or(""), &json_error);
      if (parsed) {
        for (auto& t : *parsed) {
          if (t.outcome == TestOutcome::kSkipped) t.message = stream.skip_reason(t.name);
          finished.push_back(t);
        }
      } else {
        for (const auto& t : stream.finished()) {
          TestResult done = t;
          if (t.outcome == TestOutcome::kSkipped) done.message = stream.skip_reason(t.name);
          finished.push_back(done);
        }
        culprit = stream.running();
        died_before_tests = stream.finished().empty();
      }
    }
    for (const auto& t : finished)
      if (std::find(pending.begin(), pending.end(), t.name) != pending.end()) results[t.name] = t;
    if (culprit.empty() && run_filter != filter) culprit = run_filter;
    if (!culprit.empty() && !results.count(culprit)) {
      const bool exited = !r.timed_out && !r.memory_exceeded && r.signal == 0;
      TestResult dead{culprit, dead_outcome, "while this test ran, the test program " + how};
      if (exited) dead.message = "the test program ended (" + how + ") in the middle of this test";
      const std::string said = trim(stream.output_of(culprit));
      if (!said.empty()) dead.message += "; its last output:\n" + said;
      results[culprit] = dead;
    } else if (culprit.empty() && died_before_tests && finished.empty()) {
      // It died before the first test: running the tests one by one would only repeat it.
      for (const auto& name : pending)
        results[name] = {name, dead_outcome,
                         "the test program " + how + " before any test ran" +
                             (json_error.empty() ? "" : " (" + json_error + ")")};
    }
    std::vector<std::string> still;
    for (const auto& name : pending)
      if (!results.count(name)) still.push_back(name);
    if (still.size() == pending.size() && run_filter != filter) {
      // A rerun that explains nothing: give up on that test rather than loop.
      results[still.front()] = {still.front(), TestOutcome::kCrashed,
                                "the test program gave no result for this test (" + how + ")"};
      still.erase(still.begin());
    }
    pending = std::move(still);
  }
  for (const auto& name : listed_tests) run.tests.push_back(results[name]);
  return run;
}

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  return trim(out);
}

// GoogleTest heads each failure with "path/file.cpp:42" (or "unknown file").
bool is_failure_header(const std::string& line) {
  // "path:42" in the JSON report, "path:42: Failure" in the console stream.
  static const std::regex header(R"(^(\S.*:\d+|unknown file)(: Failure)?$)");
  return std::regex_match(line, header);
}

// Lines GoogleTest writes itself for a failed assertion, as opposed to the test's own message.
bool is_gtest_text(const std::string& line) {
  if (line[0] == ' ' || line[0] == '\t') return true;        // operands, "  Actual: ..."
  if (line == "Failed" || line == "Expected:") return true;  // FAIL(), a multi-line expectation
  for (const char* start : {"Expected equality of these values:", "Expected: ", "Value of: ",
                            "Actual: ", "Which is: ", "The difference between ", "Death test:"})
    if (line.rfind(start, 0) == 0) return true;
  return line.find(" evaluates to ") != std::string::npos;  // EXPECT_NEAR's operands
}

// What AddressSanitizer's report kind means, in words a student acts on.
std::string explain_asan(const std::string& kind, const std::string& access) {
  const bool write = access == "WRITE";
  const std::string did = write ? "wrote" : "read";
  if (kind == "heap-buffer-overflow") return did + " past the end of an array";
  if (kind == "stack-buffer-overflow") return did + " past the end of a local array";
  if (kind == "global-buffer-overflow") return did + " past the end of a global array";
  if (kind == "heap-use-after-free") return "used memory after it was freed";
  if (kind == "stack-use-after-return") return "used a local variable of a function that returned";
  if (kind == "double-free") return "freed the same memory twice";
  if (kind == "SEGV") return "invalid memory access (a null or wild pointer)";
  if (kind == "stack-overflow") return "stack overflow (runaway recursion or a huge local array)";
  return "";
}

}  // namespace

std::string student_path(const std::string& path) {
  for (const char* root : {"/impl/", "/starter/"}) {
    const auto at = path.rfind(root);
    if (at != std::string::npos) return path.substr(at + std::string(root).size());
  }
  static const std::regex emulated(R"(_kernels/([^/]+\.cuh?)\.cpp$)");
  std::smatch m;
  if (std::regex_search(path, m, emulated)) return m[1];
  return "";
}

std::string crash_summary(const std::string& output) {
  static const std::regex asan(R"(ERROR: AddressSanitizer: ([A-Za-z-]+))");
  static const std::regex access(R"(\b(READ|WRITE) of size \d+)");
  static const std::regex frame(R"(^\s*#\d+ 0x[0-9a-fA-F]+ in .* ([^\s:]+):(\d+)(:\d+)?$)");
  static const std::regex ubsan(R"(^(\S+):(\d+):\d+: runtime error: (.*)$)");
  static const std::regex emulator(R"(CUDA emulator: (.*))");
  static const std::regex emulator_where(R"(^\s+at (block \([^)]*\), thread \([^)]*\)))");
  const std::vector<std::string> lines = lines_of(output);
  std::smatch m;
  // The student's file and line: the first frame in a student file.
  std::string where;
  for (const auto& l : lines) {
    if (!std::regex_match(l, m, frame)) continue;
    const std::string file = student_path(m[1]);
    if (!file.empty()) {
      where = file + ":" + m[2].str();
      break;
    }
  }
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (std::regex_search(l, m, asan)) {
      const std::string kind = m[1];
      std::string how;
      for (std::size_t k = i; k < lines.size() && how.empty(); ++k)
        if (std::regex_search(lines[k], m, access)) how = m[1];
      const std::string words = explain_asan(kind, how);
      return (where.empty() ? "" : where + ": ") + kind + (words.empty() ? "" : " (" + words + ")");
    }
    if (std::regex_match(l, m, ubsan)) {
      const std::string file = student_path(m[1]);
      const std::string at = file.empty() ? where : file + ":" + m[2].str();
      return (at.empty() ? "" : at + ": ") + squeeze(m[3]);
    }
    if (std::regex_search(l, m, emulator)) {
      std::string what = squeeze(m[1]);
      if (i + 1 < lines.size() && std::regex_search(lines[i + 1], m, emulator_where))
        what += " at " + m[1].str();
      return (where.empty() ? "" : where + ": ") + what;
    }
  }
  return "";
}

std::string failure_gist(const std::string& message) {
  const std::string crash = crash_summary(message);
  if (!crash.empty()) return crash;
  // The runner's own words on how a test died (run_gtest above) are the lesson as they are.
  for (const char* own : {"the test program ", "while this test ran"})
    if (message.rfind(own, 0) == 0) return squeeze(message);
  static const std::regex exception(R"(C\+\+ exception with description \"([\s\S]*?)\" thrown in)");
  std::smatch m;
  if (std::regex_search(message, m, exception)) return squeeze(m[1]);
  // The first failure: the lines after its header (what the test printed before it aside), up
  // to the next failure's header. Without a header the message is not GoogleTest's: as it is.
  const std::vector<std::string> lines = lines_of(message);
  std::size_t begin = 0;
  while (begin < lines.size() && !is_failure_header(lines[begin])) ++begin;
  if (begin == lines.size()) return squeeze(message);
  ++begin;
  std::size_t end = begin;
  while (end < lines.size() && !is_failure_header(lines[end])) ++end;
  // GoogleTest's comparison comes first, the test's own message (after << ) last.
  std::size_t last_gtest = begin;
  for (std::size_t i = begin; i < end; ++i)
    if (!trim(lines[i]).empty() && is_gtest_text(lines[i])) last_gtest = i + 1;
  std::string comparison, lesson;
  for (std::size_t i = begin; i < end; ++i)
    (i < last_gtest ? comparison : lesson) += lines[i] + "\n";
  comparison = squeeze(comparison);
  lesson = squeeze(lesson);
  if (lesson.empty()) return comparison;
  if (comparison.empty() || comparison == "Failed") return lesson;
  return lesson + " (" + comparison + ")";
}

}  // namespace gtl::grader
