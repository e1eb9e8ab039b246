// GPU: two simulated ranks sharing one GPU run flat DDP and give the CPU's synced gradient (the
// GEMMs differ by rounding, hence a tolerance). Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/in_process.h"
#include "gtl/nn/models.h"
#include "gtl_test.h"

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
        flat_ddp_sync(comm, buffer);
        if (comm.rank() == 0) out = buffer.grads().to(gtl::Device::cpu()).to_vector();
      },
      options);
  return out;
}

TEST(GpuDdp, TwoRanksSharingOneGpuMatchTheCpu) {
  GTL_REQUIRE_GPU();
  const std::vector<float> cpu = synced_grad(gtl::Device::cpu());
  const std::vector<float> gpu = synced_grad(gtl::Device::cuda(0));
  EXPECT_EQ(gtl::testing::compare(gpu, cpu, {1e-4, 1e-3}), "")
      << "flat DDP of two ranks on one GPU must give the CPU's averaged gradient";
}

}  // namespace
}  // namespace lab05
