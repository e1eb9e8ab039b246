// fork/exec with a process group, a timer, an RSS watchdog and an output cap (see process.h).
#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

extern char** environ;

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLine = 4096;

// Keeps the first and the last `cap / 2` bytes of a stream: the start says what the program
// was doing, the end says how it died.
class CappedBuffer {
 public:
  explicit CappedBuffer(std::size_t cap) : half_(cap / 2) {}
  void append(const char* data, std::size_t n) {
    total_ += n;
    const std::size_t to_head = std::min(n, half_ - std::min(half_, head_.size()));
    head_.append(data, to_head);
    tail_.append(data + to_head, n - to_head);
    if (tail_.size() > 2 * half_ + 4096) tail_.erase(0, tail_.size() - half_);
  }
  std::string str() const {
    const std::size_t keep = std::min(tail_.size(), half_);
    const std::size_t dropped = total_ - head_.size() - keep;
    std::string out = head_;
    if (dropped > 0)
      out += "\n[... " + std::to_string(dropped) + " bytes of output not shown ...]\n";
    out.append(tail_, tail_.size() - keep, keep);
    return out;
  }
  std::size_t total() const { return total_; }

 private:
  std::size_t half_;
  std::size_t total_ = 0;
  std::string head_, tail_;
};

struct ProcInfo {
  pid_t pid = 0, ppid = 0;
  long rss_pages = 0;
};

// Every process in /proc with its parent and resident set.
std::vector<ProcInfo> all_processes() {
  std::vector<ProcInfo> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    if (!std::getline(in, stat)) continue;
    const auto close = stat.rfind(')');  // the command name may contain spaces and ')'
    if (close == std::string::npos) continue;
    std::istringstream rest(stat.substr(close + 2));
    std::string field;
    ProcInfo p;
    p.pid = std::atoi(name.c_str());
    // Fields after the name: state(3) ppid(4) pgrp(5) ... rss(24).
    for (int i = 3; i <= 24 && rest >> field; ++i) {
      if (i == 4) p.ppid = std::atoi(field.c_str());
      if (i == 24) p.rss_pages = std::atol(field.c_str());
    }
    out.push_back(p);
  }
  return out;
}

// The processes below `root` in the parent tree (not `root` itself).
std::vector<ProcInfo> descendants_of(pid_t root, const std::vector<ProcInfo>& all) {
  std::vector<ProcInfo> out;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    for (const auto& p : all) {
      if (p.ppid != parent || p.pid == root) continue;
      out.push_back(p);
      frontier.push_back(p.pid);
    }
  }
  return out;
}

// What the memory bound counts, in MiB, over every descendant of the grader. The grader runs one
// program at a time, so these are that program and everything it started, daemons included
// (they are re-parented to the grader, a child subreaper).
struct MemoryUse {
  double resident_mb = 0;  // the resident sets (/proc/<pid>/stat)
  double shared_mb = 0;    // memory in files: memfds and tmpfs files held open, private tmpfs
};

bool in_memory_fs(const struct statfs& fs) {
  constexpr long kTmpfs = 0x01021994, kHugetlbfs = 0x958458f6;  // memfds live on either
  return fs.f_type == kTmpfs || fs.f_type == kHugetlbfs;
}

// A device number: the file system `path` is on (0 when it cannot be read).
dev_t device_of(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_dev : 0;
}

MemoryUse descendants_memory() {
  static const long page = sysconf(_SC_PAGESIZE);
  // The grader's own /tmp and /dev/shm are the machine's (shared with everyone): not counted as a
  // program's mounts; a sandboxed program has private ones (sandbox.h), counted whole.
  static const dev_t own_tmp = device_of("/tmp"), own_shm = device_of("/dev/shm");
  MemoryUse use;
  std::set<dev_t> mounts;                   // private tmpfs mounts, counted whole
  std::set<std::pair<dev_t, ino_t>> files;  // in-memory files held open, counted once
  double shared_bytes = 0;
  const std::vector<ProcInfo> procs = descendants_of(getpid(), all_processes());
  for (const auto& p : procs) {
    use.resident_mb += double(p.rss_pages) * double(page) / (1024.0 * 1024.0);
    const std::string root = "/proc/" + std::to_string(p.pid) + "/root";
    for (const char* m : {"/tmp", "/dev/shm"}) {
      const std::string path = root + m;
      struct statfs fs {};
      const dev_t dev = device_of(path);
      if (dev == 0 || dev == own_tmp || dev == own_shm || mounts.count(dev)) continue;
      if (statfs(path.c_str(), &fs) != 0 || !in_memory_fs(fs)) continue;
      mounts.insert(dev);
      shared_bytes += double(fs.f_blocks - fs.f_bfree) * double(fs.f_frsize);
    }
  }
  for (const auto& p : procs) {
    std::error_code ec;
    const fs::path fds = "/proc/" + std::to_string(p.pid) + "/fd";
    for (const auto& e : fs::directory_iterator(fds, ec)) {
      struct statfs fs {};
      struct stat st {};
      // Follows the descriptor's magic link to the open file itself (memfds included).
      if (statfs(e.path().c_str(), &fs) != 0 || !in_memory_fs(fs)) continue;
      if (stat(e.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      if (mounts.count(st.st_dev) || !files.insert({st.st_dev, st.st_ino}).second) continue;
      shared_bytes += double(st.st_blocks) * 512.0;
    }
  }
  use.shared_mb = shared_bytes / (1024.0 * 1024.0);
  return use;
}

// Orphans of the programs the grader starts become its children, not init's.
void become_subreaper() {
  static const bool done = prctl(PR_SET_CHILD_SUBREAPER, 1) == 0;
  (void)done;
}

// Kills the program's process group and every descendant of the grader.
void kill_everything(pid_t pgid) {
  kill(-pgid, SIGKILL);
  for (const auto& p : descendants_of(getpid(), all_processes())) kill(p.pid, SIGKILL);
}

// The environment of the child: the grader's, with `extra` ("NAME=value") added or replacing.
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  auto name_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& x) {
      return name_of(x) == name_of(kv);
    });
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  return env;
}

}  // namespace

std::string RunResult::describe(double timeout_s) const {
  std::ostringstream s;
  if (failed_to_start) {
    s << "could not start the program";
  } else if (capped) {
    s << "was stopped when the time cap was reached, after " << static_cast<long>(wall_s)
      << " s (killed)";
  } else if (timed_out) {
    s << "timed out after " << timeout_s << " s (killed)";
  } else if (memory_exceeded) {
    s << "used more than the memory limit of " << static_cast<long>(memory_limit_mb) << " MiB ("
      << static_cast<long>(peak_rss_mb) << " MiB resident";
    if (peak_shared_mb >= 1)
      s << " + " << static_cast<long>(peak_shared_mb)
        << " MiB in memory files: memfd, /dev/shm, /tmp";
    s << "; killed)";
  } else if (signal != 0) {
    s << "crashed (signal " << signal << ": " << strsignal(signal) << ")";
  } else {
    s << "exit code " << exit_code;
  }
  return s.str();
}

RunResult run_process(const std::vector<std::string>& argv, const RunLimits& limits,
                      const fs::path& cwd, const LineHandler& on_line, const RunExtras& extras) {
  RunResult result;
  result.memory_limit_mb = limits.memory_mb;
  become_subreaper();
  int out_pipe[2], err_pipe[2], chan_pipe[2] = {-1, -1};
  if (argv.empty() || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 ||
      (extras.verdict_channel && pipe2(chan_pipe, O_CLOEXEC) != 0)) {
    result.failed_to_start = true;
    result.output = "cannot create a pipe: " + std::string(strerror(errno));
    return result;
  }
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> full_argv = extras.wrapper;
  full_argv.insert(full_argv.end(), argv.begin(), argv.end());
  std::vector<std::string> env_extra = extras.env;
  // A descriptor number the program cannot assume: it is told it, in a variable it must read.
  const int chan_fd = 100 + static_cast<int>(std::stoul(random_hex(4), nullptr, 16) % 800);
  if (extras.verdict_channel) {
    result.verdict_key = random_hex(32);
    env_extra.push_back("GTL_GRADER_VERDICT_FD=" + std::to_string(chan_fd));
    env_extra.push_back("GTL_GRADER_VERDICT_KEY=" + result.verdict_key);
  }
  const std::vector<std::string> env = child_environment(env_extra);
  std::vector<char*> cargv, cenv;
  for (const auto& a : full_argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  const std::string dir = cwd.string();

  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // a grader killed from outside takes its child along
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    if (chan_pipe[1] >= 0) dup2(chan_pipe[1], chan_fd);  // dup2 clears close-on-exec
    if (!dir.empty() && chdir(dir.c_str()) != 0) {
      const int e = errno;
      (void)!write(err_pipe[1], &e, sizeof e);
      _exit(127);
    }
    execvpe(cargv[0], cargv.data(), cenv.data());
    const int e = errno;
    (void)!write(err_pipe[1], &e, sizeof e);
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (chan_pipe[1] >= 0) close(chan_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    if (chan_pipe[0] >= 0) close(chan_pipe[0]);
    result.failed_to_start = true;
    result.output = "fork failed: " + std::string(strerror(errno));
    return result;
  }
  setpgid(pid, pid);  // also in the parent: no race with the first kill

  int exec_errno = 0;
  if (read(err_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    close(err_pipe[0]);
    close(out_pipe[0]);
    if (chan_pipe[0] >= 0) close(chan_pipe[0]);
    waitpid(pid, nullptr, 0);
    result.failed_to_start = true;
    result.output = "cannot run '" + full_argv[0] + "'" + (dir.empty() ? "" : " in " + dir) + ": " +
                    strerror(exec_errno);
    return result;
  }
  close(err_pipe[0]);
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);
  if (chan_pipe[0] >= 0) fcntl(chan_pipe[0], F_SETFL, O_NONBLOCK);

  CappedBuffer captured(limits.output_bytes);
  std::string line;
  auto feed_lines = [&](const char* data, std::size_t n) {
    if (!on_line) return;
    for (std::size_t i = 0; i < n; ++i) {
      if (data[i] == '\n') {
        on_line(line);
        line.clear();
      } else if (line.size() < kMaxLine) {
        line.push_back(data[i]);
      }
    }
  };
  constexpr std::size_t kMaxVerdicts = 1 << 20;
  bool chan_eof = chan_pipe[0] < 0;
  std::vector<char> buf(1 << 16);
  auto drain_channel = [&] {
    while (!chan_eof) {
      const ssize_t n = read(chan_pipe[0], buf.data(), buf.size());
      if (n > 0) {
        const std::size_t room = kMaxVerdicts - std::min(kMaxVerdicts, result.verdicts.size());
        result.verdicts.append(buf.data(), std::min(room, std::size_t(n)));
      } else if (n == 0) {
        chan_eof = true;
      } else {
        break;
      }
    }
  };

  bool eof = false, reaped = false;
  int status = 0;
  Clock::time_point reaped_at{};
  auto last_rss_check = start - std::chrono::seconds(1);
  while (true) {
    pollfd p[2] = {{out_pipe[0], POLLIN, 0}, {chan_pipe[0], POLLIN, 0}};
    if (!eof) poll(p, chan_eof ? 1 : 2, 50);
    while (!eof) {
      const ssize_t n = read(out_pipe[0], buf.data(), buf.size());
      if (n > 0) {
        captured.append(buf.data(), std::size_t(n));
        feed_lines(buf.data(), std::size_t(n));
      } else if (n == 0) {
        eof = true;
      } else {
        break;  // EAGAIN: nothing more now
      }
    }
    drain_channel();
    const auto now = Clock::now();
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      reaped_at = now;
      kill(-pid, SIGKILL);  // grandchildren that outlive the program go too
    }
    if (reaped && (eof || now - reaped_at > std::chrono::seconds(1))) break;
    if (reaped) continue;
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (elapsed > limits.timeout_s || now >= limits.deadline) {
      if (!result.timed_out) result.capped = elapsed <= limits.timeout_s;
      result.timed_out = true;
      kill_everything(pid);
    }
    if (now - last_rss_check >= std::chrono::milliseconds(100)) {
      last_rss_check = now;
      const MemoryUse use = descendants_memory();
      const double total = use.resident_mb + use.shared_mb;
      if (total > result.peak_rss_mb + result.peak_shared_mb) {
        result.peak_rss_mb = use.resident_mb;
        result.peak_shared_mb = use.shared_mb;
      }
      if (total > limits.memory_mb) {
        result.memory_exceeded = true;
        kill_everything(pid);
      }
    }
    if (eof) poll(nullptr, 0, 50);  // output closed but the program runs: keep timing it
  }
  // Whatever the program left behind (a daemon that left its group included) dies now, before
  // the grader reads a result or writes a report.
  result.stray_processes = kill_all_descendants();
  drain_channel();
  close(out_pipe[0]);
  if (chan_pipe[0] >= 0) close(chan_pipe[0]);
  if (on_line && !line.empty()) on_line(line);

  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  result.output_total = captured.total();
  result.output = captured.str();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  if (!extras.wrapper.empty() && result.exit_code > 128 && result.exit_code < 128 + 65) {
    // bubblewrap exits with 128 + N when the program it ran was killed by signal N.
    result.signal = result.exit_code - 128;
    result.exit_code = -1;
  }
  return result;
}

int kill_all_descendants() {
  std::vector<pid_t> seen;
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  // "None left" must hold for a few rounds in a row: an orphan whose parent is exiting is for a
  // moment a child of neither, and is re-parented to us (the subreaper) only after that.
  int quiet_rounds = 0;
  while (Clock::now() < give_up) {
    const std::vector<ProcInfo> left = descendants_of(getpid(), all_processes());
    // Zombies are children not yet reaped: reaping them is all they need.
    for (const auto& p : left) {
      kill(p.pid, SIGKILL);
      if (std::find(seen.begin(), seen.end(), p.pid) == seen.end()) seen.push_back(p.pid);
    }
    int status = 0;
    while (waitpid(-1, &status, WNOHANG) > 0) {
    }
    quiet_rounds = left.empty() ? quiet_rounds + 1 : 0;
    if (quiet_rounds >= 4) break;
    poll(nullptr, 0, 5);
  }
  return static_cast<int>(seen.size());
}

std::string random_hex(std::size_t n) {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    char c = 0;
    urandom.get(c);
    out += digits[static_cast<unsigned char>(c) % 16];
  }
  return out;
}

bool program_available(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace gtl::grader
