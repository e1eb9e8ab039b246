// Lab 01 benchmarks. The rubric compares pairs measured in the same run, as ratios of medians:
//
//   BM_VectorAdd vs BM_DeviceCopy      both move 12 bytes per element (vector add reads a and b
//                                      and writes c; the copy reads and writes 6 bytes): equal
//                                      times mean your kernel runs at copy bandwidth. Rubric:
//                                      copy time / vector add time >= 0.7.
//   BM_HostToDevice/1 vs /0            the same 256 MiB copy from your allocate_host(pinned) and
//                                      allocate_host(pageable). Rubric: pageable / pinned >= 1.5.
//   BM_Scale/1 vs BM_Scale/0           the same job, chunked over 16 streams or serial. The gain
//                                      comes from host-to-device and device-to-host copies running
//                                      at once (the kernel is tiny): ideally 2c / (c + 1) with c
//                                      chunks, 1.88x for 16. Rubric: serial / pipelined >= 1.3.
//   BM_VectorAddCpu vs BM_VectorAdd    the CPU vs GPU comparison of TODO 7 (shown, not graded).
//
// Every GPU figure is GPU time between two events, with the whole device synchronised before
// the first and before the second, so that the work of every stream lies between them, and L2
// flushed before each run (timed_loop, common/bench/gpu_timed_loop.h, shared by every lab).
// Arrays of 256 MiB are far larger than any L2 cache (50 MB on an H100) in any case. A result that
// is wrong fails the benchmark: a kernel that does nothing is not fast, it is incorrect.
#include <benchmark/benchmark.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_basics.h"
#include "gtl/runtime/device.h"
#include "gtl/tensor/philox.h"

#ifdef GTL_WITH_CUDA
#include <cuda_runtime.h>

#include "gpu_timed_loop.h"
#endif

namespace {

constexpr int64_t kN = int64_t{1} << 26;  // 64 Mi floats = 256 MiB per array

#ifdef GTL_WITH_CUDA

using gtl::bench::skip_without_gpu;
using gtl::bench::timed_loop;

// Random inputs, so that the spot check cannot pass by accident. Generated once per process:
// 64 Mi draws take seconds, and Google Benchmark calls a benchmark function several times.
const std::vector<float>& random_input(int which) {
  static const std::array<std::vector<float>, 2> inputs = [] {
    std::array<std::vector<float>, 2> v{std::vector<float>(kN), std::vector<float>(kN)};
    for (int64_t i = 0; i < kN; ++i) {
      v[0][i] = gtl::philox::uniform(17, i);
      v[1][i] = gtl::philox::uniform(18, i);
    }
    return v;
  }();
  return inputs[which];
}

float* device_copy_of(const std::vector<float>& host) {
  float* d = nullptr;
  cudaMalloc(&d, host.size() * sizeof(float));
  cudaMemcpy(d, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  return d;
}

void BM_DeviceCopy(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int64_t bytes = kN * 6;  // read 6 + write 6 bytes per vector-add element
  void *src, *dst;
  cudaMalloc(&src, bytes);
  cudaMalloc(&dst, bytes);
  cudaMemset(src, 1, bytes);
  timed_loop(state, [&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr); });
  state.SetBytesProcessed(state.iterations() * bytes * 2);
  cudaFree(src), cudaFree(dst);
}

void BM_VectorAdd(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  float* a = device_copy_of(random_input(0));
  float* b = device_copy_of(random_input(1));
  float* c = nullptr;
  cudaMalloc(&c, kN * sizeof(float));
  cudaMemset(c, 0xff, kN * sizeof(float));  // NaN everywhere: unwritten elements show
  timed_loop(state, [&] { lab01::vector_add_device(a, b, c, kN, nullptr); });
  state.SetBytesProcessed(state.iterations() * kN * 12);
  // Spot-check the result, first, last and a stride across the array.
  for (int64_t i : {int64_t{0}, kN / 3, kN - 1}) {
    if (state.error_occurred()) break;
    float vc;
    cudaMemcpy(&vc, c + i, 4, cudaMemcpyDeviceToHost);
    if (!(vc == random_input(0)[i] + random_input(1)[i]))
      state.SkipWithError("vector_add_device computed a wrong result");
  }
  cudaFree(a), cudaFree(b), cudaFree(c);
}

void BM_HostToDevice(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const bool pinned = state.range(0) == 1;
  state.SetLabel(pinned ? "pinned" : "pageable");
  const int64_t bytes = kN * 4;
  void* host = lab01::allocate_host(bytes, pinned);  // your TODO 5a
  std::memset(host, 1, bytes);
  void* dev;
  cudaMalloc(&dev, bytes);
  timed_loop(state, [&] { cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, nullptr); });
  state.SetBytesProcessed(state.iterations() * bytes);
  cudaFree(dev);
  lab01::free_host(host, pinned);
}

void BM_Scale(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const bool pipelined = state.range(0) == 1;
  constexpr int kChunks = 16;
  state.SetLabel(pipelined ? "pipelined, " + std::to_string(kChunks) + " streams" : "serial");
  int device = 0, copy_engines = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&copy_engines, cudaDevAttrAsyncEngineCount, device);
  if (pipelined && copy_engines < 2) {
    state.SkipWithError(("this GPU has " + std::to_string(copy_engines) +
                         " copy engine(s) (cudaDevAttrAsyncEngineCount): it cannot copy to and "
                         "from the device at the same time, so no pipeline can beat serial")
                            .c_str());
    return;
  }
  float *in, *out, *d_in, *d_out;
  cudaMallocHost(&in, kN * 4);
  cudaMallocHost(&out, kN * 4);
  cudaMalloc(&d_in, kN * 4);
  cudaMalloc(&d_out, kN * 4);
  for (int64_t i = 0; i < kN; ++i) in[i] = static_cast<float>(i % 1000);
  std::memset(out, 0xff, kN * 4);
  timed_loop(state, [&] {
    if (pipelined) {
      lab01::scale_pipelined(in, out, d_in, d_out, kN, 2.f, kChunks);
    } else {
      lab01::scale_serial(in, out, d_in, d_out, kN, 2.f);
    }
  });
  state.SetBytesProcessed(state.iterations() * kN * 8);
  for (int64_t i : {int64_t{0}, kN / 2 + 1, kN - 1}) {
    if (state.error_occurred()) break;
    if (!(out[i] == 2.f * in[i])) state.SkipWithError("the scaled output is wrong");
  }
  cudaFreeHost(in), cudaFreeHost(out), cudaFree(d_in), cudaFree(d_out);
}

BENCHMARK(BM_DeviceCopy)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_VectorAdd)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HostToDevice)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Scale)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);

#endif  // GTL_WITH_CUDA

void BM_VectorAddCpu(benchmark::State& state) {
  std::vector<float> a(kN), b(kN), c(kN);
  for (int64_t i = 0; i < kN; ++i) a[i] = gtl::philox::uniform(1, i), b[i] = 1.f;
  for (auto _ : state) {
    lab01::vector_add_cpu(a.data(), b.data(), c.data(), kN);
    benchmark::DoNotOptimize(c.data());
  }
  state.SetBytesProcessed(state.iterations() * kN * 12);
  if (!(c[kN - 1] == a[kN - 1] + 1.f))
    state.SkipWithError("vector_add_cpu computed a wrong result");
}
BENCHMARK(BM_VectorAddCpu)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
