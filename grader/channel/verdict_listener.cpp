// The grader's verdict channel, linked into every GoogleTest program of the course.
//
// Why: a student's file is linked into the test program, so anything the program prints or
// writes where the student's code can reach it (GoogleTest's "[       OK ]" lines on stdout, the
// --gtest_output JSON rewritten at exit, a test reported as skipped) can be forged. gtl-grade
// therefore never takes a verdict from stdout or from the JSON report. It opens a pipe before
// exec, hands its write end to the program at a file descriptor named in
// GTL_GRADER_VERDICT_FD, and a per-run random key in GTL_GRADER_VERDICT_KEY. This listener,
// compiled from the pristine course only, reads both during static initialisation, wipes them
// from the environment (also from the memory /proc/self/environ shows), marks the descriptor
// close-on-exec, and writes one record per event, each prefixed with the key:
//
//   <key> hello <marker>         the listener started
//   <key> seed <N>               the grading seed the tests use (gtl_test_seed.h)
//   <key> plan <Suite.Name>      every test this run will run (sent at program start)
//   <key> run <Suite.Name>       a test starts
//   <key> passed|failed|skipped <Suite.Name>
//   <key> end                    RUN_ALL_TESTS returned normally
//
// The grader rejects the whole run when a record does not carry the key (forged), and counts a
// test that has no outcome record as not run. What this cannot stop (docs/grader.md, "Trust
// model"): code in the same process that reads the key from this file's memory and writes
// records itself. Outside the grader (no GTL_GRADER_VERDICT_FD) it does nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "gtl_test_seed.h"

namespace {

constexpr const char* kFdVar = "GTL_GRADER_VERDICT_FD";
constexpr const char* kKeyVar = "GTL_GRADER_VERDICT_KEY";

// The marker lets the grader tell a program that carries this listener (and must report through
// it) from one that does not: it is searched for in the executable.
volatile const char kMarker[] = "gtl-grader-verdict-channel-v1";

class VerdictListener : public testing::EmptyTestEventListener {
 public:
  VerdictListener(int fd, std::string key) : fd_(fd), key_(std::move(key)) {}

  void OnTestProgramStart(const testing::UnitTest& unit) override {
    send("hello", const_cast<const char*>(kMarker));
    send("seed", std::to_string(gtl::test_seed::seed()));
    for (int i = 0; i < unit.total_test_suite_count(); ++i) {
      const testing::TestSuite* suite = unit.GetTestSuite(i);
      for (int j = 0; j < suite->total_test_count(); ++j) {
        const testing::TestInfo* t = suite->GetTestInfo(j);
        if (t->should_run()) send("plan", name(*t));
      }
    }
  }
  void OnTestStart(const testing::TestInfo& t) override { send("run", name(t)); }
  void OnTestEnd(const testing::TestInfo& t) override {
    const testing::TestResult* r = t.result();
    const char* outcome = r->Failed() ? "failed" : r->Skipped() ? "skipped" : "passed";
    send(outcome, name(t));
  }
  void OnTestProgramEnd(const testing::UnitTest&) override { send("end", ""); }

 private:
  static std::string name(const testing::TestInfo& t) {
    return std::string(t.test_suite_name()) + "." + t.name();
  }
  // One write per record: a pipe write of at most PIPE_BUF bytes is atomic.
  void send(const char* event, const std::string& what) {
    std::string record = key_ + " " + event + (what.empty() ? "" : " " + what) + "\n";
    if (record.size() > 4000) record = key_ + " " + event + " <name too long>\n";
    (void)!write(fd_, record.data(), record.size());
  }

  int fd_;
  std::string key_;
};

// Reads and wipes one variable into `out` (at most `size` - 1 characters): the characters are
// overwritten where the kernel keeps them, so neither getenv() nor /proc/self/environ shows them
// afterwards. No std::string: this runs before any other static initialisation.
void take_env(const char* var, char* out, std::size_t size) {
  char* value = std::getenv(var);
  if (value == nullptr) return;
  const std::size_t n = std::strlen(value);
  if (n < size) std::memcpy(out, value, n + 1);
  std::memset(value, 0, n);
  unsetenv(var);
}

char g_fd_text[16];
char g_key[80];

// The earliest user priority (101), in the executable (linked before any library): the key and
// the seed are taken before a student's static initialiser (default priority, or 101 in a library
// linked later) can read them. A constructor below 101 could still run first; the compiler warns
// that those are reserved, and the batch view lists it (suspicious.h).
__attribute__((constructor(101))) void take_channel() {
  take_env(kFdVar, g_fd_text, sizeof g_fd_text);
  take_env(kKeyVar, g_key, sizeof g_key);
  if (g_key[0] != 0) gtl::test_seed::seed();  // read now: the value the tests use is reported
}

// Registers the listener, in ordinary static initialisation (GoogleTest's globals exist then).
bool install() {
  if (g_fd_text[0] == 0 || g_key[0] == 0) return false;
  const int fd = std::atoi(g_fd_text);
  if (fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return false;  // programs it starts do not inherit it
  testing::UnitTest::GetInstance()->listeners().Append(new VerdictListener(fd, g_key));
  std::memset(g_key, 0, sizeof g_key);  // the listener keeps the only copy
  return true;
}

[[maybe_unused]] const bool installed = install();

}  // namespace
