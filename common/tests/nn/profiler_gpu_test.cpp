// The module profiler on a GPU (and on the CPU emulator): device times from events, read with one
// host synchronisation at finish(); each call's launches.
#include <gtest/gtest.h>

#include <memory>

#include "gtl/nn/activation.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/nn/profiler.h"
#include "gtl/nn/residual_mlp.h"
#include "gtl/nn/sequential.h"
#include "gtl/runtime/host_sync.h"
#include "gtl/runtime/launch_count.h"
#include "gtl_test.h"

namespace gtl::nn {
namespace {

TEST(ProfilerGpu, DeviceTimesNeedOneSyncAtFinish) {
  GTL_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  Generator gen(8);
  Sequential model;
  model.add(std::make_unique<Linear>(12, 20, gen));
  model.add(std::make_unique<ReLU>());
  ParameterBuffer buffer(model, gpu);
  const Tensor x = Tensor::normal({5, 12}, gen).to(gpu);
  const Tensor dy = Tensor::ones({5, 20}).to(gpu);
  Profiler profiler(model, gpu);
  const HostSyncCounts before = host_sync_counts();
  Context ctx;
  const Tensor y = model.forward(x, ctx);
  model.backward(ctx, dy);
  EXPECT_EQ((host_sync_counts() - before).total(), 0) << "profiling must not wait for the GPU";
  profiler.finish();
  EXPECT_EQ((host_sync_counts() - before).total(), 1) << "finish() waits once, for the events";
  ASSERT_EQ(profiler.calls().size(), 4u);
  for (const ProfiledCall& c : profiler.calls()) {
    EXPECT_GE(c.device_us, 0) << c.path << " " << c.pass;
    EXPECT_GE(c.device_start_us, 0) << c.path << " " << c.pass;
    EXPECT_EQ(c.syncs.total(), 0) << c.path << " " << c.pass;
  }
  const ProfiledCall& linear = profiler.calls()[0];
  EXPECT_GE(linear.launches.library, 1) << "a Linear forward is a cuBLAS GEMM";
  EXPECT_GE(profiler.calls()[1].launches.kernels, 1) << "a ReLU is a kernel";
  EXPECT_GE(profiler.summary()[0].device_us, 0);
}

// With a container that launches work of its own (ResidualMLP's residual add), the records'
// launches add up to the step's: every launch is in exactly one record, the add's in the block's.
TEST(ProfilerGpu, EveryLaunchIsInOneRecord) {
  GTL_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  Generator gen(9);
  Sequential model;
  model.add(std::make_unique<Linear>(12, 16, gen));
  model.add(std::make_unique<ResidualMLP>(16, gen));
  ParameterBuffer buffer(model, gpu);
  const Tensor x = Tensor::normal({5, 12}, gen).to(gpu);
  const Tensor dy = Tensor::ones({5, 16}).to(gpu);
  Profiler profiler(model, gpu);
  const LaunchCounts before = launch_counts();
  Context ctx;
  const Tensor y = model.forward(x, ctx);
  model.backward(ctx, dy);
  const LaunchCounts step = launch_counts() - before;
  profiler.finish();
  LaunchCounts recorded;
  const std::string block = model.children()[1]->path();
  for (const ProfiledCall& c : profiler.calls()) {
    recorded += c.launches;
    EXPECT_GE(c.device_us, 0) << c.path << " " << c.pass;
    if (c.path == block) {
      EXPECT_GE(c.launches.kernels, 1) << c.pass << ": the residual add is a kernel of its own";
    }
  }
  EXPECT_EQ(recorded, step) << "the records' launches are the step's, each once";
}

}  // namespace
}  // namespace gtl::nn
