// TODO 7: the DDP run as two and as three real processes under mpirun (MPI backend, CPU) gives bit
// for bit the in-process result. The tests start `mpirun -np 2` and `mpirun -np 3 lab05_ddp_train`
// themselves, so they run under the grader like any other test; skipped, with the reason, in a
// build without OpenMPI. Each launch ends within kJobTimeoutS + 10 s (launched_job.h), and the
// three launches of this program together within its CTest timeout (CMakeLists.txt).
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/in_process.h"
#include "gtl_judge_output.h"
#include "lab05_test_util.h"
#include "launched_job.h"

namespace lab05 {
namespace {

std::string temp_path() {
  return "/tmp/lab05_result_" + std::to_string(::getpid()) + ".txt";
}

// The in-process run of the same training: deterministic sums, the core's flat all-reduce.
TrainResult in_process(int world) {
  std::vector<TrainResult> results(world);
  gtl::dist::run_ranks(
      world,
      [&](Communicator& comm) {
        results[comm.rank()] = train_lab_model(comm, TrainConfig{}, core_flat_sync());
      },
      testing::fast(/*deterministic=*/true));
  return results[0];
}

// The run's final weights and rank 0's losses go to the judge under `test`.
void expect_matches(const std::string& command, const std::string& out, int world,
                    const std::string& backend, const std::string& test) {
  std::remove(out.c_str());
  const gtl::testing::Launched job = gtl::testing::launch(command);
  ASSERT_EQ(job.status, 0) << gtl::testing::launch_failure(command, job);
  std::ifstream probe(out);
  ASSERT_TRUE(probe.good()) << "`" << command << "` wrote no result file " << out
                            << ": rank 0 of lab05_ddp_train must write it (write_result)";
  const ResultFile file = read_result(out);
  std::remove(out.c_str());
  gtl::judge::Outputs recorded(test);
  recorded.record_digest(file.result.weights.data(), file.result.weights.size());
  recorded.record_digest(file.result.losses.data(), file.result.losses.size());
  EXPECT_EQ(file.backend, backend) << "the program must take its communicator from the "
                                   << "launcher's environment (init_from_environment)";
  EXPECT_EQ(file.world_size, world) << "world size of `" << command << "`";
  const TrainResult expected = in_process(world);
  EXPECT_EQ(testing::bitwise_diff(file.result.weights, expected.weights), "")
      << "`" << command << "`: the final weights must equal the in-process run of the same "
      << "training on " << world << " ranks bit for bit (deterministic reductions on both"
      << (world > 2 ? "; with 3 or more ranks a sum in another order than rank order gives other "
                      "bits, which 2 ranks cannot show: revisit which backends must sum "
                      "deterministically)"
                    : ")");
  EXPECT_EQ(testing::bitwise_diff(file.result.losses, expected.losses), "")
      << "rank 0's losses must equal the in-process rank 0's";
}

TEST(RealProcesses, OneProcessWithoutALauncherMatchesOneInProcessRank) {
  const std::string out = temp_path();
  expect_matches(std::string(LAB05_DDP_TRAIN) + " --out " + out, out, 1, "in-process",
                 "RealProcesses.OneProcessWithoutALauncherMatchesOneInProcessRank");
}

TEST(RealProcesses, MpirunTwoProcessesMatchTwoInProcessRanks) {
  const std::string mpiexec = LAB05_MPIEXEC;
  if (mpiexec.empty()) GTEST_SKIP() << "this build has no MPI backend (OpenMPI not found)";
  const std::string out = temp_path();
  expect_matches(gtl::testing::mpirun(mpiexec, 2) + " " + LAB05_DDP_TRAIN + " --out " + out, out, 2,
                 "mpi", "RealProcesses.MpirunTwoProcessesMatchTwoInProcessRanks");
}

// Three processes: the sum of three gradients depends on its order ((g0 + g1) + g2 is not
// g0 + (g1 + g2) in float32), and the flat gradient's 42,688 floats and the 50 samples do not
// divide by 3 (a ragged ring chunk, a padded shard). Bit for bit with the in-process run means
// the processes reduce in rank order, as the in-process deterministic all-reduce does; with two
// processes the order cannot show (a + b == b + a). A rank that blocks is reported by its own
// collective's timeout (which rank waited where, for whom) or by mpirun's (launched_job.h).
TEST(RealProcesses, MpirunThreeProcessesMatchThreeInProcessRanks) {
  const std::string mpiexec = LAB05_MPIEXEC;
  if (mpiexec.empty()) GTEST_SKIP() << "this build has no MPI backend (OpenMPI not found)";
  const std::string out = temp_path();
  expect_matches(gtl::testing::mpirun(mpiexec, 3) + " " + LAB05_DDP_TRAIN + " --out " + out, out, 3,
                 "mpi", "RealProcesses.MpirunThreeProcessesMatchThreeInProcessRanks");
}

}  // namespace
}  // namespace lab05
