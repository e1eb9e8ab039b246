// Runs one program as a child process, the way a grader must: in its own process group, with a
// wall-clock limit, a bound on resident memory, and a cap on the output it keeps.
//
// Why not `ulimit -v` (RLIMIT_AS)? The CUDA runtime reserves tens of GiB of virtual address space
// at start-up, so an address-space limit kills every CUDA program. RLIMIT_DATA has the same flaw
// for large PROT_NONE reservations on some kernels. Instead the parent samples the resident set
// (RSS, /proc/<pid>/stat) of every process in the child's group ten times a second and kills the
// group when the sum passes the bound: RSS counts memory actually touched, not reservations.
// RSS does not count memory held in files that live in memory and are not mapped: a memfd, a
// file in /dev/shm or in a tmpfs /tmp. The bound adds them: every such file a descendant holds
// open (/proc/<pid>/fd, counted once), and the whole used size of a descendant's private /tmp
// and /dev/shm (the sandbox's, seen through /proc/<pid>/root; never the machine's own, which
// other users share). A file both mapped and held open counts twice: the bound errs high.
//
// Every descendant is contained, not only the process group: a program can setsid() and fork a
// daemon that leaves the group. The grader makes itself a child subreaper
// (PR_SET_CHILD_SUBREAPER), so every orphan of a program it started is re-parented to it and
// stays its descendant; the memory bound sums the resident sets of all descendants, a timeout
// kills all of them, and when the program ends every descendant left is killed and reaped before
// run_process returns. The grader therefore never outlives a process it started.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace gtl::grader {

struct RunLimits {
  double timeout_s = 60;
  // A time cap over several runs (a check's, a lab's): a run still going at this instant is
  // killed like a timeout, and RunResult::capped says which of the two stopped it.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  double memory_mb = 8192;
  std::size_t output_bytes = 64 * 1024;  // kept: the first half and the last half
};

struct RunResult {
  int exit_code = -1;  // when the program exited normally
  int signal = 0;      // when a signal ended it (SIGSEGV, SIGKILL, ...)
  bool timed_out = false;
  bool capped = false;  // timed_out because the deadline came before its own timeout
  bool memory_exceeded = false;
  bool failed_to_start = false;
  double wall_s = 0;
  double peak_rss_mb = 0;     // at the peak of the memory the bound counts: resident sets ...
  double peak_shared_mb = 0;  // ... plus memory files (memfds, tmpfs files, private /tmp, /dev/shm)
  double memory_limit_mb = 0;    // the bound it ran under
  std::size_t output_total = 0;  // bytes the program printed, kept or not
  std::string output;            // stdout and stderr interleaved, capped
  std::string verdict_key;       // RunExtras::verdict_channel: the key records must carry
  std::string verdicts;          // ... and what arrived on the channel (capped at 1 MiB)
  int stray_processes = 0;       // descendants still alive when the program ended (all killed)

  bool ok() const { return exit_code == 0 && !timed_out && !memory_exceeded && signal == 0; }
  // "exit code 1", "killed by SIGSEGV (segmentation fault)", "timed out after 5 s", ...
  std::string describe(double timeout_s) const;
};

// Called for every line the program prints (each line cut at 4 KiB), in order, kept or not.
using LineHandler = std::function<void(const std::string& line)>;

// What a grading run adds around a program.
struct RunExtras {
  std::vector<std::string> env;  // "NAME=value", added to (or replacing in) the environment
  // Open the verdict channel (grader/channel/verdict_listener.cpp): a pipe whose write end the
  // program gets at the descriptor named in GTL_GRADER_VERDICT_FD, and a fresh random key in
  // GTL_GRADER_VERDICT_KEY; what arrives is returned in RunResult::verdicts.
  bool verdict_channel = false;
  std::vector<std::string> wrapper;  // runs `wrapper... argv...` (a sandbox: sandbox.h)
};

// Runs argv[0] (found through PATH if it has no '/') with argv in `cwd`, stdin from /dev/null.
RunResult run_process(const std::vector<std::string>& argv, const RunLimits& limits,
                      const std::filesystem::path& cwd = {}, const LineHandler& on_line = {},
                      const RunExtras& extras = {});

// Kills (SIGKILL) and reaps every descendant of this process; returns how many there were.
// run_process calls it after each program; main() calls it before the grader exits.
int kill_all_descendants();

// A random hexadecimal string of `n` characters from /dev/urandom.
std::string random_hex(std::size_t n);

// True when `program` is found on PATH (or is an executable path).
bool program_available(const std::string& program);

}  // namespace gtl::grader
