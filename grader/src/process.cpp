// fork/exec with a process group, a timer, an RSS watchdog and an output cap (see process.h).
#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

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

// Sum of the resident sets of every process whose process group is `pgid`, in MiB.
double group_rss_mb(pid_t pgid) {
  static const long page = sysconf(_SC_PAGESIZE);
  double bytes = 0;
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
    long pgrp = 0, rss = 0;
    // Fields after the name: state(3) ppid(4) pgrp(5) ... rss(24).
    for (int i = 3; i <= 24 && rest >> field; ++i) {
      if (i == 5) pgrp = std::atol(field.c_str());
      if (i == 24) rss = std::atol(field.c_str());
    }
    if (pgrp == pgid) bytes += double(rss) * double(page);
  }
  return bytes / (1024.0 * 1024.0);
}

}  // namespace

std::string RunResult::describe(double timeout_s) const {
  std::ostringstream s;
  if (failed_to_start) {
    s << "could not start the program";
  } else if (timed_out) {
    s << "timed out after " << timeout_s << " s (killed)";
  } else if (memory_exceeded) {
    s << "used more than the memory limit (" << static_cast<long>(peak_rss_mb)
      << " MiB resident; killed)";
  } else if (signal != 0) {
    s << "crashed (signal " << signal << ": " << strsignal(signal) << ")";
  } else {
    s << "exit code " << exit_code;
  }
  return s.str();
}

RunResult run_process(const std::vector<std::string>& argv, const RunLimits& limits,
                      const fs::path& cwd, const LineHandler& on_line) {
  RunResult result;
  int out_pipe[2], err_pipe[2];
  if (argv.empty() || pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.failed_to_start = true;
    result.output = "cannot create a pipe: " + std::string(strerror(errno));
    return result;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  const std::string dir = cwd.string();

  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(out_pipe[1], 2);
    if (!dir.empty() && chdir(dir.c_str()) != 0) {
      const int e = errno;
      (void)!write(err_pipe[1], &e, sizeof e);
      _exit(127);
    }
    execvp(cargv[0], cargv.data());
    const int e = errno;
    (void)!write(err_pipe[1], &e, sizeof e);
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.failed_to_start = true;
    result.output = "fork failed: " + std::string(strerror(errno));
    return result;
  }
  setpgid(pid, pid);  // also in the parent: no race with the first kill

  int exec_errno = 0;
  if (read(err_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    close(err_pipe[0]);
    close(out_pipe[0]);
    waitpid(pid, nullptr, 0);
    result.failed_to_start = true;
    result.output = "cannot run '" + argv[0] + "'" + (dir.empty() ? "" : " in " + dir) + ": " +
                    strerror(exec_errno);
    return result;
  }
  close(err_pipe[0]);
  fcntl(out_pipe[0], F_SETFL, O_NONBLOCK);

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

  bool eof = false, reaped = false;
  int status = 0;
  Clock::time_point reaped_at{};
  auto last_rss_check = start - std::chrono::seconds(1);
  std::vector<char> buf(1 << 16);
  while (true) {
    pollfd p{out_pipe[0], POLLIN, 0};
    if (!eof) poll(&p, 1, 50);
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
    const auto now = Clock::now();
    if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
      reaped = true;
      reaped_at = now;
      kill(-pid, SIGKILL);  // grandchildren that outlive the program go too
    }
    if (reaped && (eof || now - reaped_at > std::chrono::seconds(1))) break;
    if (reaped) continue;
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (elapsed > limits.timeout_s) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
    }
    if (now - last_rss_check >= std::chrono::milliseconds(100)) {
      last_rss_check = now;
      const double rss = group_rss_mb(pid);
      result.peak_rss_mb = std::max(result.peak_rss_mb, rss);
      if (rss > limits.memory_mb) {
        result.memory_exceeded = true;
        kill(-pid, SIGKILL);
      }
    }
    if (eof) poll(nullptr, 0, 50);  // output closed but the program runs: keep timing it
  }
  close(out_pipe[0]);
  if (on_line && !line.empty()) on_line(line);

  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  result.output_total = captured.total();
  result.output = captured.str();
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
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
