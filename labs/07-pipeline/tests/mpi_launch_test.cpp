// The executor (TODO 5) in real processes: the 2-stage pipeline under `mpirun -np 2` (MPI backend,
// CPU) gives bit for bit the in-process run's loss and gradients. The test starts the program
// itself, so it runs under the grader like any other test; skipped, with the reason, in a build
// without OpenMPI.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "gtl/distributed/in_process.h"
#include "gtl_judge_output.h"
#include "lab07_cases.h"
#include "lab07_schedules.h"
#include "launched_job.h"
#include "pipeline_training.h"

namespace lab07 {
namespace {

std::string temp_prefix() {
  return "/tmp/lab07_result_" + std::to_string(::getpid());
}

std::vector<StageResult> in_process(int p) {
  const PipelineConfig config = testing::mpi_config(p);
  const Schedule schedule = testing::mpi_schedule(p);
  std::vector<StageResult> results(static_cast<std::size_t>(p));
  gtl::dist::RunOptions options;
  options.timeout = std::chrono::seconds(10);
  gtl::dist::run_ranks(
      p,
      [&](Communicator& comm) {
        const auto s = static_cast<std::size_t>(comm.rank());
        results[s] = pipeline_step(comm, config, schedule[s]);
      },
      options);
  return results;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Every rank's result file (its loss and gradients) goes to the judge under `test`, which
// recomputes the sequential step.
void expect_matches(const std::string& command, const std::string& prefix, int p,
                    const std::string& backend, const std::string& test) {
  gtl::judge::Outputs recorded(test);
  for (int r = 0; r < p; ++r) std::remove((prefix + ".rank" + std::to_string(r)).c_str());
  const gtl::testing::Launched job = gtl::testing::launch(command);
  ASSERT_EQ(job.status, 0) << gtl::testing::launch_failure(command, job);
  const std::vector<StageResult> expected = in_process(p);
  // The in-process run is itself checked against the whole model's sequential step, so that an
  // executor that sends nothing cannot match itself.
  const StageResult whole = sequential_step(testing::mpi_config(p));
  for (const StageResult& stage : expected) {
    for (const auto& [name, grad] : stage.grads) {
      ASSERT_TRUE(whole.grads.count(name) && same_bits(grad, whole.grads.at(name)))
          << "the in-process pipeline on " << p << " rank(s) must give the sequential step's "
          << "gradient of " << name << " bit for bit (see Executor.*EqualsTheSequentialStep*)";
    }
  }
  for (int r = 0; r < p; ++r) {
    const std::string path = prefix + ".rank" + std::to_string(r);
    std::ifstream probe(path);
    ASSERT_TRUE(probe.good()) << "`" << command << "` wrote no result file " << path;
    const StageResultFile file = read_stage_result(path);
    std::remove(path.c_str());
    recorded.record(file.backend), recorded.record(file.world_size);
    lab07_cases::record_stage(recorded, file.result);
    EXPECT_EQ(file.backend, backend) << "rank " << r << "'s communicator";
    EXPECT_EQ(file.world_size, p);
    const StageResult& want = expected[static_cast<std::size_t>(r)];
    EXPECT_TRUE(same_bits({file.result.loss}, {want.loss}))
        << "stage " << r << ": loss " << file.result.loss << " under `" << command
        << "`, in-process " << want.loss;
    ASSERT_EQ(file.result.grads.size(), want.grads.size()) << "stage " << r << "'s parameters";
    for (const auto& [name, grad] : want.grads) {
      EXPECT_TRUE(file.result.grads.count(name) && same_bits(file.result.grads.at(name), grad))
          << "stage " << r << ": the gradient of " << name << " under `" << command
          << "` must equal the in-process run's bit for bit: the same executor, the same "
          << "messages, only the transport differs";
    }
  }
}

TEST(RealProcesses, OneProcessWithoutALauncherIsTheWholeModel) {
  const std::string prefix = temp_prefix();
  expect_matches(std::string(LAB07_PIPELINE_TRAIN) + " --out " + prefix, prefix, 1, "in-process",
                 "RealProcesses.OneProcessWithoutALauncherIsTheWholeModel");
}

TEST(RealProcesses, MpirunTwoStagesMatchTwoInProcessRanks) {
  const std::string mpiexec = LAB07_MPIEXEC;
  if (mpiexec.empty()) GTEST_SKIP() << "this build has no MPI backend (OpenMPI not found)";
  const std::string prefix = temp_prefix();
  expect_matches(gtl::testing::mpirun(mpiexec, 2) + " " + LAB07_PIPELINE_TRAIN + " --out " + prefix,
                 prefix, 2, "mpi", "RealProcesses.MpirunTwoStagesMatchTwoInProcessRanks");
}

}  // namespace
}  // namespace lab07
