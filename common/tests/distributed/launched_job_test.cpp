// launched_job.h: a launched job that hangs ends inside its test's time, and the failure names the
// rank that waited, the operation and the peer it waited for.
#include "launched_job.h"

#include <gtest/gtest.h>

#include <chrono>

namespace {

TEST(LaunchedJob, AHungCollectiveEndsAtTheRankTimeoutNamingWhoWaitedForWhom) {
  const std::string command =
      gtl::testing::mpirun(GTL_MPIEXEC, 2, "mpi", /*rank_timeout_s=*/2) + " " + GTL_HANG_FIXTURE;
  const auto start = std::chrono::steady_clock::now();
  const gtl::testing::Launched job = gtl::testing::launch(command);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(job.status, 0) << job.output;
  EXPECT_LT(seconds, 25) << "the job must end at its ranks' 2 s timeout, not when rank 1 wakes";
  const std::string failure = gtl::testing::launch_failure(command, job);
  EXPECT_NE(failure.find("rank 0/2 (mpi): all_reduce timed out after 2 s waiting for rank"),
            std::string::npos)
      << failure;
}

TEST(LaunchedJob, ShellQuotingKeepsTheCommandWhole) {
  const gtl::testing::Launched job = gtl::testing::launch("echo 'it'\"'\"'s' one; exit 3");
  EXPECT_EQ(job.status, 3);
  EXPECT_EQ(job.output, "it's one\n");
}

}  // namespace
