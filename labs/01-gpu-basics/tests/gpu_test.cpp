// Lab 01 checks that need a GPU: device properties (TODO 1b), device memory and the vector-add
// kernel (TODO 3), timing (TODO 4), transfer bandwidth (TODO 5) and the stream pipeline (TODO 6).
// Each test skips, with the reason, on a machine without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gpu_basics.h"
#include "gtl/tensor/philox.h"
#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "lab01_cases.h"

#ifdef GTL_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace {

using lab01_cases::random_vector;

TEST(DescribeDevice, NamesTheGpuAndItsResources) {
  GTL_REQUIRE_GPU();
  const std::string line = lab01::describe_device(0);
  gtl::judge::Outputs("DescribeDevice.NamesTheGpuAndItsResources").record(line);
  const gtl::DeviceProperties p = gtl::device_properties(0);
  EXPECT_EQ(line.rfind(p.name + ": ", 0), 0u) << "TODO 1b: start with the device name: " << line;
  EXPECT_TRUE(line.find(std::to_string(p.multiprocessors) + " SMs") != std::string::npos) << line;
  EXPECT_TRUE(line.find("sm_" + std::to_string(p.compute_major) +
                        std::to_string(p.compute_minor)) != std::string::npos)
      << line;
}

#ifdef GTL_WITH_CUDA

// A failed CUDA call of the test itself, named with its error. The error may be your kernel's: a
// launch reports a fault only at a later CUDA call.
std::string cuda_failure(const char* call, cudaError_t error) {
  return std::string(call) + " failed: " + cudaGetErrorName(error) + ": " +
         cudaGetErrorString(error) + " (possibly left by an earlier kernel)";
}

#define ASSERT_CUDA(call)                                                   \
  do {                                                                      \
    const cudaError_t error_ = (call);                                      \
    if (error_ != cudaSuccess) GTEST_FAIL() << cuda_failure(#call, error_); \
  } while (0)

// Owners of device and pinned memory, so that an ASSERT's early return frees them too.
struct CudaFree {
  void operator()(float* p) const { cudaFree(p); }
};
struct CudaFreeHost {
  void operator()(float* p) const { cudaFreeHost(p); }
};
using DeviceFloats = std::unique_ptr<float[], CudaFree>;
using PinnedFloats = std::unique_ptr<float[], CudaFreeHost>;

cudaError_t allocate(DeviceFloats& owner, int64_t n) {
  float* p = nullptr;
  const cudaError_t error = cudaMalloc(&p, n * sizeof(float));
  owner.reset(p);
  return error;
}

cudaError_t allocate(PinnedFloats& owner, int64_t n) {
  float* p = nullptr;
  const cudaError_t error = cudaMallocHost(&p, n * sizeof(float));
  owner.reset(p);
  return error;
}

TEST(VectorAddGpu, MatchesTheCpuOnEverySize) {
  GTL_REQUIRE_GPU();
  // Sizes around the block size catch a missing bounds check; 0 and 1 catch off-by-one setup.
  gtl::judge::Outputs recorded("VectorAddGpu.MatchesTheCpuOnEverySize");
  for (int64_t n : lab01_cases::gpu_vector_add_sizes()) {
    const std::vector<float> a = random_vector(n, 1), b = random_vector(n, 2);
    std::vector<float> c(n, std::nanf(""));
    lab01::vector_add_gpu(a.data(), b.data(), c.data(), n);
    recorded.record_digest(c.data(), size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(c[i], a[i] + b[i])
          << "TODO 3: c[" << i << "] for n = " << n << " (NaN means the element was never written)";
    }
  }
}

TEST(VectorAddDevice, GridStrideLoopCoversLargeArraysAndStopsAtN) {
  GTL_REQUIRE_GPU();
  // More elements than any grid of a few blocks per SM has threads: only a grid-stride loop
  // reaches the end. Sentinels after n catch writes past the end.
  const int64_t n = lab01_cases::kGridStrideN, pad = lab01_cases::kGridStridePad;
  const std::vector<float> a = random_vector(n, 3), b = random_vector(n, 4);
  DeviceFloats da, db, dc;
  ASSERT_CUDA(allocate(da, n));
  ASSERT_CUDA(allocate(db, n));
  ASSERT_CUDA(allocate(dc, n + pad));
  ASSERT_CUDA(cudaMemcpy(da.get(), a.data(), n * 4, cudaMemcpyHostToDevice));
  ASSERT_CUDA(cudaMemcpy(db.get(), b.data(), n * 4, cudaMemcpyHostToDevice));
  const std::vector<float> sentinel(n + pad, 12345.f);
  ASSERT_CUDA(cudaMemcpy(dc.get(), sentinel.data(), (n + pad) * 4, cudaMemcpyHostToDevice));
  lab01::vector_add_device(da.get(), db.get(), dc.get(), n, nullptr);
  std::vector<float> c(n + pad);
  ASSERT_CUDA(cudaMemcpy(c.data(), dc.get(), (n + pad) * 4, cudaMemcpyDeviceToHost));
  gtl::judge::Outputs("VectorAddDevice.GridStrideLoopCoversLargeArraysAndStopsAtN")
      .record_digest(c.data(), size_t(n + pad));
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(c[i], a[i] + b[i]) << "TODO 3a: element " << i << " of " << n
                                 << " is wrong: does the loop step by blockDim.x * gridDim.x?";
  }
  for (int64_t i = n; i < n + pad; ++i) {
    ASSERT_EQ(c[i], 12345.f) << "TODO 3a: the kernel wrote past n at " << i;
  }
}

TEST(EventTiming, AHostTimerWithoutSyncMeasuresOnlyTheLaunches) {
  GTL_REQUIRE_GPU();
  // 64 Mi floats: each launch is ~0.1-1 ms of GPU work, far longer than queuing it.
  const lab01::LaunchTiming t = lab01::time_vector_add(int64_t{1} << 26, 20);
  gtl::judge::Outputs timing("EventTiming.AHostTimerWithoutSyncMeasuresOnlyTheLaunches");
  timing.record(t.host_ms_without_sync), timing.record(t.host_ms_with_sync),
      timing.record(t.event_ms);
  EXPECT_GT(t.event_ms, 0.f) << "TODO 4: events must measure the GPU work";
  EXPECT_TRUE(std::isfinite(t.host_ms_with_sync) && t.host_ms_with_sync > 0) << "TODO 4";
  EXPECT_LT(t.host_ms_without_sync, 0.5 * t.event_ms)
      << "TODO 4: without a synchronisation the host clock stops as soon as the launches are "
         "queued, long before the GPU finishes: expected far less than the event time "
      << t.event_ms << " ms, got " << t.host_ms_without_sync << " ms";
  EXPECT_GE(t.host_ms_with_sync, 0.9 * t.event_ms)
      << "TODO 4: with a synchronisation the host clock covers all the GPU work";
}

TEST(HostMemory, PinnedIsPageLockedAndPageableIsNot) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("HostMemory.PinnedIsPageLockedAndPageableIsNot");
  for (bool pinned : {true, false}) {
    void* p = lab01::allocate_host(1 << 20, pinned);
    ASSERT_NE(p, nullptr);
    cudaPointerAttributes attributes{};
    const cudaError_t query = cudaPointerGetAttributes(&attributes, p);
    lab01::free_host(p, pinned);
    if (query != cudaSuccess) FAIL() << cuda_failure("cudaPointerGetAttributes", query);
    recorded.record(int(attributes.type));
    EXPECT_EQ(attributes.type, pinned ? cudaMemoryTypeHost : cudaMemoryTypeUnregistered)
        << "TODO 5a: "
        << (pinned ? "pinned memory comes from cudaMallocHost"
                   : "pageable memory is ordinary malloc memory");
  }
}

TEST(TransferBandwidth, EveryDirectionGivesAPhysicalNumber) {
  GTL_REQUIRE_GPU();
  const double hbm = gtl::device_properties(0).peak_memory_bandwidth_gbs();
  gtl::judge::Outputs recorded("TransferBandwidth.EveryDirectionGivesAPhysicalNumber");
  for (bool pinned : {false, true}) {
    for (bool to_device : {true, false}) {
      const double gbs = lab01::copy_bandwidth_gbs(64 << 20, pinned, to_device, 5);
      recorded.record(gbs);
      EXPECT_TRUE(std::isfinite(gbs) && gbs > 0.1 && gbs < hbm)
          << "TODO 5: " << (pinned ? "pinned" : "pageable") << (to_device ? " H2D" : " D2H")
          << " bandwidth " << gbs << " GB/s is not a plausible PCIe/NVLink figure (0.1 to " << hbm
          << " GB/s): are the events recorded around the copies (on the copy's stream), and is the "
             "end "
             "event synchronised before cudaEventElapsedTime?";
    }
  }
}

TEST(StreamPipeline, GivesExactlyTheSerialResult) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("StreamPipeline.GivesExactlyTheSerialResult");
  for (auto [n, chunks] : lab01_cases::gpu_pipeline_cases()) {
    PinnedFloats in, out_serial, out_pipe;
    DeviceFloats d_in, d_out;
    ASSERT_CUDA(allocate(in, n));
    ASSERT_CUDA(allocate(out_serial, n));
    ASSERT_CUDA(allocate(out_pipe, n));
    ASSERT_CUDA(allocate(d_in, n));
    ASSERT_CUDA(allocate(d_out, n));
    const std::vector<float> x = random_vector(n, 5);
    std::copy(x.begin(), x.end(), in.get());
    std::fill(out_pipe.get(), out_pipe.get() + n, std::nanf(""));
    lab01::scale_serial(in.get(), out_serial.get(), d_in.get(), d_out.get(), n, 3.f);
    // Cleared on the default stream, which does not order itself with non-blocking streams:
    // finish it before the pipeline starts.
    ASSERT_CUDA(cudaMemset(d_out.get(), 0, n * 4));
    ASSERT_CUDA(cudaDeviceSynchronize());
    lab01::scale_pipelined(in.get(), out_pipe.get(), d_in.get(), d_out.get(), n, 3.f, chunks);
    recorded.record_digest(out_pipe.get(), size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out_pipe[i], out_serial[i])
          << "TODO 6: element " << i << " of n = " << n << " with " << chunks
          << " chunks (NaN: never copied back; did you synchronise every stream?)";
    }
  }
}

#endif  // GTL_WITH_CUDA

}  // namespace
