// GPU: two simulated ranks sharing one GPU run flat DDP and give the CPU's synced gradient (the
// GEMMs differ by rounding, hence a tolerance); TODO 7's program under mpirun on 2+ GPUs runs
// NCCL and gives the CPU run's losses, and reports its step time. Skipped without the hardware.
#include <gtest/gtest.h>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/in_process.h"
#include "gtl/distributed/nccl_communicator.h"
#include "gtl/nn/models.h"
#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "launched_job.h"

namespace lab05 {
namespace {

std::vector<float> synced_grad(gtl::Device device) {
  std::vector<float> out;
  gtl::dist::RunOptions options;
  options.device = device;
  gtl::dist::run_ranks(
      2,
      [&](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        gtl::nn::ParameterBuffer buffer(*model, device);
        gtl::nn::Context ctx;
        Tensor x = Tensor::full({4, 1, 28, 28}, 0.25 * (comm.rank() + 1)).to(device);
        Tensor y = model->forward(x, ctx);
        model->backward(ctx, Tensor::ones(y.shape()).to(device));
        flat_ddp_sync(comm, buffer.params());
        if (comm.rank() == 0) out = buffer.grads().to(gtl::Device::cpu()).to_vector();
      },
      options);
  return out;
}

TEST(GpuDdp, TwoRanksSharingOneGpuMatchTheCpu) {
  GTL_REQUIRE_GPU();
  const std::vector<float> cpu = synced_grad(gtl::Device::cpu());
  const std::vector<float> gpu = synced_grad(gtl::Device::cuda(0));
  gtl::judge::Outputs("GpuDdp.TwoRanksSharingOneGpuMatchTheCpu").record_all(gpu);
  EXPECT_EQ(gtl::testing::compare(gpu, cpu, {1e-4, 1e-3}), "")
      << "flat DDP of two ranks on one GPU must give the CPU's averaged gradient";
}

TEST(RealProcessesGpu, NcclOnTwoGpusMatchesTheCpuRun) {
  GTL_REQUIRE_GPU();
  if (gtl::cuda_device_count() < 2) GTEST_SKIP() << "needs 2 GPUs (NCCL: one rank per GPU)";
  if (!gtl::dist::nccl_available()) GTEST_SKIP() << "this build has no NCCL";
  const std::string mpiexec = LAB05_MPIEXEC;
  if (mpiexec.empty()) GTEST_SKIP() << "this build has no MPI (mpirun starts the ranks)";
  const std::string out = "/tmp/lab05_nccl_" + std::to_string(::getpid()) + ".txt";
  const std::string command =
      gtl::testing::mpirun(mpiexec, 2, "nccl") + " " + LAB05_DDP_TRAIN + " --out " + out;
  const auto t0 = std::chrono::steady_clock::now();
  const gtl::testing::Launched job = gtl::testing::launch(command);
  ASSERT_EQ(job.status, 0) << gtl::testing::launch_failure(command, job);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ResultFile file = read_result(out);
  std::remove(out.c_str());
  gtl::judge::Outputs("RealProcessesGpu.NcclOnTwoGpusMatchesTheCpuRun")
      .record_all(file.result.losses);
  EXPECT_EQ(file.backend, "nccl") << "under mpirun on GPUs the program must run NCCL";
  std::vector<TrainResult> cpu(2);
  gtl::dist::run_ranks(2, [&](Communicator& comm) {
    cpu[comm.rank()] = train_lab_model(comm, TrainConfig{}, core_flat_sync());
  });
  EXPECT_EQ(gtl::testing::compare(file.result.losses, cpu[0].losses, {1e-4, 1e-3}), "")
      << "rank 0's losses on 2 GPUs (NCCL) must match the CPU run within GEMM rounding";
  std::cout << "[ figures  ] mpirun -np 2 on 2 GPUs (NCCL), " << TrainConfig{}.steps
            << " steps including start-up: " << seconds << " s\n";
}

}  // namespace
}  // namespace lab05
