// Real processes started by a test (a training program alone, or under mpirun), each under limits
// of its own that end well inside the test's: a job that hangs fails the test with the reason
// (which rank waited, in which operation, for whom), never as a bare timeout of the whole test.
//
//   const std::string cmd = gtl::testing::mpirun(LAB05_MPIEXEC, 2) + " lab05_ddp_train --out f";
//   const gtl::testing::Launched job = gtl::testing::launch(cmd);
//   ASSERT_EQ(job.status, 0) << gtl::testing::launch_failure(cmd, job);
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace gtl::testing {

// The limits, in seconds. The tests that launch jobs have 120 s (ctest's TIMEOUT, the grader's
// test_timeout_s) and a job takes 1-2 s on 2 idle cores: every collective of a launched rank
// gives up after kRankTimeoutS and throws "rank 1/2 (mpi): all_reduce timed out after 30 s
// waiting for rank 0: ...", which the program prints before it exits; mpirun aborts the whole
// job after kJobTimeoutS (a rank stuck outside a collective); and the shell's `timeout` ends any
// job after kJobTimeoutS + 10 (a program started without mpirun).
constexpr int kRankTimeoutS = 30;
constexpr int kJobTimeoutS = 60;

// The launcher for `np` processes of `backend`: "GTL_DIST_BACKEND=mpi GTL_DIST_TIMEOUT_S=30
// <mpiexec> --timeout 60 --oversubscribe --allow-run-as-root -np <np>". CI runs as root, which
// OpenMPI refuses without --allow-run-as-root; --oversubscribe lets the processes share fewer
// cores; GTL_DIST_BACKEND pins the backend (MPI even on a machine with GPUs).
inline std::string mpirun(const std::string& mpiexec, int np, const std::string& backend = "mpi",
                          int rank_timeout_s = kRankTimeoutS) {
  return "GTL_DIST_BACKEND=" + backend + " GTL_DIST_TIMEOUT_S=" + std::to_string(rank_timeout_s) +
         " " + mpiexec + " --timeout " + std::to_string(kJobTimeoutS) +
         " --oversubscribe --allow-run-as-root -np " + std::to_string(np);
}

struct Launched {
  int status = -1;     // the shell's exit status (std::system's, decoded)
  std::string output;  // the end of what the job printed, stdout and stderr together
};

// `text` as one word of the shell, whatever it holds.
inline std::string shell_quoted(const std::string& text) {
  std::string q = "'";
  for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs `command` through the shell under `timeout`, its output kept in a file of which the last
// 4 KB are returned.
inline Launched launch(const std::string& command) {
  const std::string log = "/tmp/gtl_launched_" + std::to_string(::getpid()) + ".log";
  const std::string line = "timeout -k 5 " + std::to_string(kJobTimeoutS + 10) + " sh -c " +
                           shell_quoted(command) + " > " + log + " 2>&1";
  Launched out;
  const int raw = std::system(line.c_str());
  out.status = raw != -1 && WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  out.output = text.str();
  if (out.output.size() > 4096) out.output = "..." + out.output.substr(out.output.size() - 4096);
  std::remove(log.c_str());
  return out;
}

// What a failed job says: the command, how it ended, and what it printed last.
inline std::string launch_failure(const std::string& command, const Launched& job) {
  std::string how = "exit status " + std::to_string(job.status);
  if (job.status == 124 || job.status == 137)
    how += ": it ran past " + std::to_string(kJobTimeoutS + 10) + " s and was killed";
  else if (job.output.find("time limit for job execution has been reached") != std::string::npos)
    how += ": mpirun aborted it after " + std::to_string(kJobTimeoutS) +
           " s (a rank hung outside any collective?)";
  return "`" + command + "` failed (" + how + "); it printed:\n" + job.output;
}

}  // namespace gtl::testing
