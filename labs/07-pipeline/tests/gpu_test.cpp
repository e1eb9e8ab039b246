// GPU: the stages as simulated ranks sharing one GPU (RunOptions::device) run your executor (TODO
// 5) on the serial order and give the CPU pipeline's gradients (the GEMMs round differently on the
// GPU, hence a tolerance). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "gtl/distributed/in_process.h"
#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "lab07_schedules.h"
#include "pipeline_training.h"

namespace lab07 {
namespace {

std::vector<StageResult> run(gtl::Device device) {
  PipelineConfig config;
  config.boundaries = {0, 2, 4, 6};
  config.device = device;
  const Schedule schedule = testing::serial_order(3, 5);
  config.micro_batches = 5;
  std::vector<StageResult> results(3);
  gtl::dist::RunOptions options;
  options.device = device;
  gtl::dist::run_ranks(
      3,
      [&](Communicator& comm) {
        const auto s = static_cast<std::size_t>(comm.rank());
        results[s] = pipeline_step(comm, config, schedule[s]);
      },
      options);
  return results;
}

TEST(GpuPipeline, ThreeStagesSharingOneGpuMatchTheCpu) {
  GTL_REQUIRE_GPU();
  const std::vector<StageResult> cpu = run(gtl::Device::cpu());
  const std::vector<StageResult> gpu = run(gtl::Device::cuda(0));
  // Every stage's loss and gradients (values: the judge compares them within GEMM rounding).
  gtl::judge::Outputs recorded("GpuPipeline.ThreeStagesSharingOneGpuMatchTheCpu");
  for (const StageResult& stage : gpu) {
    recorded.record(stage.loss);
    recorded.record(stage.grads.size());
    for (const auto& [name, grad] : stage.grads) recorded.record(name), recorded.record_all(grad);
  }
  for (std::size_t s = 0; s < cpu.size(); ++s) {
    for (const auto& [name, grad] : cpu[s].grads) {
      ASSERT_TRUE(gpu[s].grads.count(name)) << name;
      EXPECT_EQ(gtl::testing::compare(gpu[s].grads.at(name), grad, {1e-6, 1e-3}), "")
          << "stage " << s << ", " << name
          << ": the serial order on three ranks sharing one GPU must give "
          << "the CPU pipeline's gradient within GEMM rounding";
    }
  }
  EXPECT_NEAR(gpu.back().loss, cpu.back().loss, 1e-4 * std::abs(cpu.back().loss))
      << "the last stage's loss";
}

}  // namespace
}  // namespace lab07
