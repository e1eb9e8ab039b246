// The CUDA runtime layer on a real GPU: properties, streams, events, timers, and the error a
// failed CUDA call produces. Skipped, with the reason, on a machine without a GPU.
#include <gtest/gtest.h>

#include <thread>

#include "gtl/ops/elementwise.h"
#include "gtl/ops/matmul.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/error.h"
#include "gtl/runtime/host_sync.h"
#include "gtl/runtime/launch_count.h"
#include "gtl/runtime/occupancy.h"
#include "gtl/runtime/stream.h"
#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

namespace gtl {
namespace {

TEST(GpuRuntime, PropertiesDescribeARealDevice) {
  GTL_REQUIRE_GPU();
  const DeviceProperties p = device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.compute_major, 7) << "CUDA 13 supports sm_75 and newer";
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_GT(p.total_memory_bytes, int64_t{1} << 30);
  EXPECT_EQ(p.warp_size, 32);
  EXPECT_GT(p.peak_memory_bandwidth_gbs(), 100.0)
      << p.memory_clock_khz << " kHz, " << p.memory_bus_width_bits << " bits";
  EXPECT_NE(cuda_version_string().find("CUDA runtime"), std::string::npos);
}

TEST(GpuRuntime, FailedCallNamesTheCallAndTheReason) {
  GTL_REQUIRE_GPU();
  try {
    DeviceGuard guard(Device::cuda(cuda_device_count() + 7));
    FAIL() << "selecting a device that does not exist must throw";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice"), std::string::npos) << what;
    EXPECT_NE(what.find("cudaErrorInvalidDevice"), std::string::npos) << what;
    EXPECT_NE(what.find("device.cpp:"), std::string::npos) << what;
  }
  // The error was cleared: the next call works.
  EXPECT_NO_THROW(device_synchronize());
}

// Host synchronisations (host_sync.h): counted where the host waits, and only there.
TEST(GpuRuntime, HostSyncsAreCountedWhereTheHostWaits) {
  GTL_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  const Tensor host = Tensor::full({1}, 3.f);
  HostSyncCounts before = host_sync_counts();
  // Allocating, and queuing a copy on a stream, wait for nothing.
  Tensor x = Tensor::empty({1}, DType::Float32, gpu);
  x.copy_async_(host, current_stream());
  EXPECT_EQ((host_sync_counts() - before).total(), 0)
      << "an allocation and an asynchronous copy must not wait for the GPU";
  // Reading a device scalar on the host: one copy, one stream synchronisation.
  before = host_sync_counts();
  EXPECT_EQ(x.item(), 3.f);
  EXPECT_EQ(host_sync_counts() - before, (HostSyncCounts{1, 0, 0}))
      << "item() on a GPU tensor waits once for its stream";
  // Reading a host scalar waits for nothing.
  before = host_sync_counts();
  EXPECT_EQ(host.item(), 3.f);
  EXPECT_EQ((host_sync_counts() - before).total(), 0) << "item() on a CPU tensor";
  // The explicit synchronisations, one of each.
  before = host_sync_counts();
  Event e;
  e.record(current_stream());
  e.synchronize();
  current_stream().synchronize();
  device_synchronize();
  EXPECT_EQ(host_sync_counts() - before, (HostSyncCounts{1, 1, 1}));
}

TEST(GpuRuntime, HostSyncCountsBelongToTheirThread) {
  GTL_REQUIRE_GPU();
  const HostSyncCounts before = host_sync_counts();
  HostSyncCounts other;
  std::thread t([&] {
    DeviceGuard guard(Device::cuda(0));
    device_synchronize();
    other = host_sync_counts();
  });
  t.join();
  EXPECT_EQ(other, (HostSyncCounts{0, 0, 1})) << "the other thread's own count";
  EXPECT_EQ(host_sync_counts() - before, HostSyncCounts{})
      << "another thread's synchronisation is not this thread's (each in-process rank is one)";
}

// Launch counts (launch_count.h): the core's own kernels and the library calls, exactly.
TEST(GpuRuntime, LaunchesAreCountedOneByOne) {
  GTL_REQUIRE_GPU();
  const Device gpu = Device::cuda(0);
  const Tensor a = Tensor::full({8, 4}, 1.0, DType::Float32, gpu);
  const Tensor b = Tensor::full({4, 8}, 2.0, DType::Float32, gpu);
  LaunchCounts before = launch_counts();
  const Tensor sum = ops::add(a, a);
  EXPECT_EQ(launch_counts() - before, (LaunchCounts{1, 0})) << "an elementwise add: one kernel";
  before = launch_counts();
  const Tensor product = ops::matmul(a, b);
  EXPECT_EQ(launch_counts() - before, (LaunchCounts{0, 1})) << "a matmul: one cuBLAS GEMM";
  before = launch_counts();
  const Tensor on_cpu = ops::add(Tensor::ones({3}), Tensor::ones({3}));
  EXPECT_EQ(launch_counts() - before, LaunchCounts{}) << "CPU work launches nothing";
  EXPECT_EQ(product.to(Device::cpu()).to_vector()[0], 8.f);
  EXPECT_EQ(sum.to(Device::cpu()).to_vector()[0], 2.f);
}

// The occupancy calculator's limits read from the device (the emulator reports an H100's).
TEST(GpuRuntime, SmLimitsOfTheDeviceAreItsArchitecturesPreset) {
  GTL_REQUIRE_GPU();
  const SmLimits dev = SmLimits::of_device(0);
  if (dev.arch != "sm_80" && dev.arch != "sm_90")
    GTEST_SKIP() << "the presets are sm_80 and sm_90; this GPU is " << dev.arch;
  const SmLimits preset = dev.arch == "sm_80" ? SmLimits::sm_80() : SmLimits::sm_90();
  EXPECT_EQ(dev.shared_per_sm, preset.shared_per_sm);
  EXPECT_EQ(dev.max_shared_per_block, preset.max_shared_per_block);
  EXPECT_EQ(dev.reserved_shared_per_block, preset.reserved_shared_per_block);
  EXPECT_EQ(dev.max_threads_per_sm, preset.max_threads_per_sm);
  EXPECT_EQ(dev.max_threads_per_block, preset.max_threads_per_block);
  EXPECT_EQ(dev.max_blocks_per_sm, preset.max_blocks_per_sm);
  EXPECT_EQ(dev.registers_per_sm, preset.registers_per_sm);
  EXPECT_EQ(dev.max_registers_per_block, preset.max_registers_per_block);
}

TEST(GpuRuntime, DeviceGuardRestoresTheDevice) {
  GTL_REQUIRE_GPU();
  { DeviceGuard guard(Device::cuda(0)); }
  EXPECT_NO_THROW(Tensor::zeros({4}, DType::Float32, Device::cuda(0)));
}

TEST(GpuRuntime, EventsOrderWorkAcrossStreams) {
  GTL_REQUIRE_GPU();
  Stream producer = Stream::create(Device::cuda(0));
  Stream consumer = Stream::create(Device::cuda(0));
  const int64_t n = testing::gpu_or_emulated(1 << 20, 4099);
  Tensor t = Tensor::empty({n}, DType::Float32, Device::cuda(0));
  {
    StreamScope scope(producer);
    t.fill_(3.0);
  }
  consumer.wait(producer);  // consumer's later work sees the fill
  Tensor host = Tensor::empty_with({n}, DType::Float32, pinned_allocator());
  host.copy_async_(t, consumer);
  consumer.synchronize();
  EXPECT_EQ(host.to_vector()[static_cast<std::size_t>(n - 1)], 3.f);
}

TEST(GpuRuntime, TimerMeasuresGpuWork) {
  GTL_REQUIRE_GPU();
  Stream s = Stream::create(Device::cuda(0));
  StreamScope scope(s);
  Tensor big =
      Tensor::empty({testing::gpu_or_emulated(64 << 20, 1 << 14)}, DType::Float32, Device::cuda(0));
  GpuTimer timer(s);
  timer.start();
  for (int i = 0; i < 10; ++i) big.fill_(i);
  timer.stop();
  const float ms = timer.elapsed_ms();
  EXPECT_GT(ms, 0.f) << "ten fills of 256 MiB (64 KiB emulated) take measurable time";
  Event done;
  done.record(s);
  done.synchronize();
  EXPECT_TRUE(done.query());
}

}  // namespace
}  // namespace gtl
