// Reading the verdict channel: the only source of pass/fail/skip the grader trusts for tests.
//
// A test program carries grader/channel/verdict_listener.cpp (linked into every GoogleTest
// program of the course). run_process opens a pipe for it and a fresh random key; the listener
// writes "<key> <event> [test]" records (hello, plan, run, passed, failed, skipped, end). stdout
// and GoogleTest's JSON are read only for messages: the student's code shares the process and
// can print or rewrite them. A record without the key is forgery and voids the run. Why the key
// is not a complete guarantee, and what is: docs/grader.md, "Trust model".
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace gtl::grader {

// The marker grader/channel/verdict_listener.cpp puts in every program it is linked into.
inline constexpr const char* kVerdictMarker = "gtl-grader-verdict-channel-v1";

struct Verdicts {
  bool hello = false;             // the listener started (the program reached RUN_ALL_TESTS)
  bool ended = false;             // RUN_ALL_TESTS returned: the program did not die mid-run
  bool forged = false;            // a record did not carry the key, or is not a known event
  std::string forged_line;        // the first such record (cut), for the report
  std::vector<std::string> plan;  // tests the program said it would run
  std::map<std::string, std::string> outcomes;  // test -> "passed" | "failed" | "skipped"
  std::string running;                          // a test that started and never ended
  std::string seed;  // the grading seed the program's tests used (gtl_test_seed.h)
};

// Parses what arrived on the channel of one run whose key was `key`.
Verdicts parse_verdicts(const std::string& channel, const std::string& key);

// True when `binary` carries the verdict listener (its marker is in the file): such a program
// must report through the channel, and a silent channel means it did not run its tests.
bool has_verdict_listener(const std::filesystem::path& binary);

}  // namespace gtl::grader
