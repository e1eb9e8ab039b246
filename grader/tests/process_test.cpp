// The child-process runner: exit codes, signals, the wall-clock limit, the memory bound (RSS,
// not address space), the output cap, and stray grandchildren. The programs it runs are this
// test binary itself, turned into a misbehaving helper by GTL_GRADER_HELPER.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "process.h"

namespace {

// Runs before main() when the binary is started as a helper, and never returns then.
[[maybe_unused]] const bool helper_ran = [] {
  const char* mode = std::getenv("GTL_GRADER_HELPER");
  if (mode == nullptr) return false;
  const std::string m = mode;
  if (m == "exit3") std::_Exit(3);
  if (m == "segv") std::raise(SIGSEGV);
  if (m == "spin")
    for (;;) std::this_thread::yield();  // never ends on its own
  if (m == "flood") {
    std::string line(99, 'x');
    line += '\n';
    for (int i = 0; i < 200000; ++i) std::fwrite(line.data(), 1, line.size(), stdout);  // 20 MB
    std::fflush(stdout);
    std::_Exit(0);
  }
  if (m == "alloc") {
    // Touch 64 MiB at a time, up to 4 GiB: only an RSS watchdog stops this early.
    std::vector<char*> blocks;
    for (int i = 0; i < 64; ++i) {
      char* p = static_cast<char*>(std::malloc(64 << 20));
      std::memset(p, 1, 64 << 20);
      blocks.push_back(p);
      usleep(20000);
    }
    std::_Exit(0);
  }
  if (m == "reserve") {
    // Like the CUDA runtime: reserve a huge address range without touching it, then exit 0.
    void* p = std::malloc(std::size_t{1} << 36);  // 64 GiB, overcommitted, never touched
    std::printf("reserved %s\n", p ? "yes" : "no");
    std::_Exit(0);
  }
  if (m == "orphan") {
    // Leaves a grandchild that keeps stdout open: the runner must not wait for it.
    if (fork() == 0) {
      sleep(600);
      std::_Exit(0);
    }
    std::printf("parent done\n");
    std::fflush(stdout);
    std::_Exit(0);
  }
  if (m == "daemon") {
    // Leaves its process group (setsid) and forks a daemon with stdout closed: the group kill
    // cannot reach it and the output pipe does not wait for it. It writes its pid for the test.
    if (fork() == 0) {
      setsid();
      if (fork() == 0) {
        std::fclose(stdout);
        std::FILE* f = std::fopen(std::getenv("GTL_GRADER_DAEMON_PID"), "w");
        std::fprintf(f, "%d\n", static_cast<int>(getpid()));
        std::fclose(f);
        for (;;) std::this_thread::yield();  // uses CPU and memory until something kills it
      }
      std::_Exit(0);
    }
    usleep(300000);  // the daemon has written its pid
    std::_Exit(0);
  }
  if (m == "daemon_memory") {
    // A daemon outside the group that touches 2 GiB: the memory bound covers it too.
    if (fork() == 0) {
      setsid();
      std::fclose(stdout);
      std::vector<char*> blocks;
      for (int i = 0; i < 32; ++i) {
        char* p = static_cast<char*>(std::malloc(64 << 20));
        std::memset(p, 1, 64 << 20);
        blocks.push_back(p);
        usleep(20000);
      }
      std::_Exit(0);
    }
    sleep(600);
    std::_Exit(0);
  }
  std::_Exit(99);
}();

std::vector<std::string> helper(const std::string& mode) {
  return {"env", "GTL_GRADER_HELPER=" + mode,
          std::filesystem::read_symlink("/proc/self/exe").string()};
}

using gtl::grader::run_process;
using gtl::grader::RunLimits;

TEST(Process, ExitCodeAndOutput) {
  const auto ok = run_process({"sh", "-c", "echo hello; echo oops >&2"}, RunLimits{});
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.output, "hello\noops\n") << "stdout and stderr are captured together";
  const auto three = run_process(helper("exit3"), RunLimits{});
  EXPECT_EQ(three.exit_code, 3);
  EXPECT_FALSE(three.ok());
  EXPECT_EQ(three.describe(1), "exit code 3");
}

TEST(Process, CrashIsReportedBySignal) {
  const auto r = run_process(helper("segv"), RunLimits{});
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.describe(1), "crashed (signal 11: Segmentation fault)") << r.describe(1);
}

TEST(Process, MissingProgramFailsToStart) {
  const auto r = run_process({"/no/such/program"}, RunLimits{});
  EXPECT_TRUE(r.failed_to_start);
  EXPECT_NE(r.output.find("No such file"), std::string::npos) << r.output;
}

TEST(Process, TimeoutKillsTheGroup) {
  RunLimits limits;
  limits.timeout_s = 0.5;
  const auto r = run_process(helper("spin"), limits);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_LT(r.wall_s, 5.0) << "the limit is enforced, not waited out";
  EXPECT_NE(r.describe(0.5).find("timed out after 0.5 s"), std::string::npos);
}

TEST(Process, OutputIsCappedButCounted) {
  RunLimits limits;
  limits.output_bytes = 8 * 1024;
  std::size_t lines = 0;
  const auto r = run_process(helper("flood"), limits, {}, [&](const std::string&) { ++lines; });
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output_total, 20'000'000u);
  EXPECT_LT(r.output.size(), 9u * 1024) << "megabytes of output must not reach the report";
  EXPECT_NE(r.output.find("bytes of output not shown"), std::string::npos);
  EXPECT_EQ(lines, 200000u) << "every line still reaches the line handler";
}

TEST(Process, ResidentMemoryBoundKills) {
  RunLimits limits;
  limits.memory_mb = 256;
  limits.timeout_s = 60;
  const auto r = run_process(helper("alloc"), limits);
  EXPECT_TRUE(r.memory_exceeded);
  EXPECT_FALSE(r.ok());
  EXPECT_GT(r.peak_rss_mb, 256.0);
  EXPECT_LT(r.peak_rss_mb, 1024.0) << "killed soon after passing the bound";
}

TEST(Process, AddressSpaceReservationsAreNotCounted) {
  RunLimits limits;
  limits.memory_mb = 256;
  const auto r = run_process(helper("reserve"), limits);
  EXPECT_TRUE(r.ok()) << "a 64 GiB untouched reservation (as CUDA makes) must not be killed: "
                      << r.describe(limits.timeout_s);
}

TEST(Process, StrayGrandchildDoesNotHoldTheRunner) {
  RunLimits limits;
  limits.timeout_s = 30;
  const auto r = run_process(helper("orphan"), limits);
  EXPECT_TRUE(r.ok());
  EXPECT_NE(r.output.find("parent done"), std::string::npos);
  EXPECT_LT(r.wall_s, 5.0) << "the grandchild is killed with the group";
}

TEST(Process, ADaemonOutsideTheGroupIsKilledWhenTheProgramEnds) {
  const std::string pid_file =
      ::testing::TempDir() + "/gtl_grader_daemon." + std::to_string(getpid()) + ".pid";
  std::remove(pid_file.c_str());
  RunLimits limits;
  limits.timeout_s = 30;
  std::vector<std::string> argv = helper("daemon");
  argv.insert(argv.begin() + 1, "GTL_GRADER_DAEMON_PID=" + pid_file);
  const auto r = run_process(argv, limits);
  EXPECT_TRUE(r.ok()) << r.describe(30) << "\n" << r.output;
  EXPECT_LT(r.wall_s, 5.0);
  std::FILE* f = std::fopen(pid_file.c_str(), "r");
  ASSERT_NE(f, nullptr) << "the helper's daemon did not start";
  int pid = 0;
  EXPECT_EQ(std::fscanf(f, "%d", &pid), 1);
  std::fclose(f);
  EXPECT_GE(r.stray_processes, 1) << "the daemon outlived its parent and was found";
  EXPECT_FALSE(std::filesystem::exists("/proc/" + std::to_string(pid)))
      << "the daemon (pid " << pid << ") that left the process group is still alive after "
      << "run_process returned: descendants are not contained";
}

TEST(Process, TheMemoryBoundCoversADaemonOutsideTheGroup) {
  RunLimits limits;
  limits.timeout_s = 30;
  limits.memory_mb = 256;
  const auto r = run_process(helper("daemon_memory"), limits);
  EXPECT_TRUE(r.memory_exceeded) << "2 GiB touched by a setsid() daemon must pass a 256 MiB bound: "
                                 << r.describe(30);
  EXPECT_LT(r.wall_s, 20.0);
}

}  // namespace
