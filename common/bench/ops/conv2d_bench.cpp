// Convolution forward throughput, and what cuDNN's benchmark mode buys:
//
//   BM_Conv2dGpu/benchmark:<0|1>/batch:<n>  ops::conv2d_forward, 64 -> 64 channels, 56 x 56, 3x3,
//                                           padding 1 (a ResNet-50 stage-1 layer), float32 with
//                                           TF32 off, algorithm by heuristic (0) or measurement (1)
//   BM_Conv2dCpu/batch:<n>                  the same layer through im2col + OpenBLAS
//
// Counter TFLOP (a rate: TFLOP/s) = 2 N K C R S P Q per convolution / time (kIsRate). Counter
// ratio_vs_heuristic (benchmark mode only) is heuristic time / measured-algorithm time from the
// same run: above 1 means measuring found a faster algorithm than the guess. The first call of
// benchmark mode (the measurement itself) happens before timing starts.
#include <benchmark/benchmark.h>

#include "gtl/ops/conv2d.h"
#include "gtl/ops/math_mode.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"
#include "gtl/tensor/tensor.h"

namespace {

using gtl::Device;
using gtl::DType;
using gtl::Tensor;
using gtl::ops::Conv2dParams;

constexpr int64_t kChannels = 64, kSize = 56, kKernel = 3;

double conv_flops(int64_t batch) {
  // Output is kSize x kSize (stride 1, padding 1): 2 flops per multiply-add.
  return 2.0 *
         static_cast<double>(batch * kChannels * kChannels * kKernel * kKernel * kSize * kSize);
}

// Milliseconds of GPU time per forward call, averaged over `calls`.
double gpu_ms_per_call(const Tensor& x, const Tensor& w, int calls) {
  gtl::GpuTimer timer(gtl::current_stream());
  timer.start();
  for (int i = 0; i < calls; ++i)
    gtl::ops::conv2d_forward(x, w, Tensor(), Conv2dParams::make(1, 1));
  timer.stop();
  return timer.elapsed_ms() / calls;
}

void BM_Conv2dGpu(benchmark::State& state) {
  if (!gtl::cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + gtl::cuda_unavailable_reason()).c_str());
    return;
  }
  const bool measure = state.range(0) != 0;
  const int64_t batch = state.range(1);
  gtl::ops::ScopedTF32 tf32(false);
  gtl::Generator gen(1);
  const Device gpu = Device::cuda(0);
  Tensor x = Tensor::uniform({batch, kChannels, kSize, kSize}, gen, -1.f, 1.f, DType::Float32, gpu);
  Tensor w = Tensor::uniform({kChannels, kChannels, kKernel, kKernel}, gen, -1.f, 1.f,
                             DType::Float32, gpu);
  double heuristic_ms = 0;
  if (measure) {
    gtl::ops::ScopedCudnnBenchmark off(false);
    gpu_ms_per_call(x, w, 1);  // choose and cache the heuristic's algorithm
    heuristic_ms = gpu_ms_per_call(x, w, 10);
  }
  gtl::ops::ScopedCudnnBenchmark mode(measure);
  gpu_ms_per_call(x, w, 1);  // warm-up; in benchmark mode, the measurement
  double total_ms = 0;
  for (auto _ : state) {
    const double ms = gpu_ms_per_call(x, w, 1);
    total_ms += ms;
    state.SetIterationTime(ms * 1e-3);
  }
  state.counters["TFLOP"] =
      benchmark::Counter(conv_flops(batch) * 1e-12 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
  if (measure) {
    state.counters["ratio_vs_heuristic"] =
        heuristic_ms / (total_ms / static_cast<double>(state.iterations()));
  }
}

void BM_Conv2dCpu(benchmark::State& state) {
  const int64_t batch = state.range(0);
  gtl::Generator gen(2);
  Tensor x = Tensor::uniform({batch, kChannels, kSize, kSize}, gen, -1.f, 1.f);
  Tensor w = Tensor::uniform({kChannels, kChannels, kKernel, kKernel}, gen, -1.f, 1.f);
  for (auto _ : state) {
    Tensor y = gtl::ops::conv2d_forward(x, w, Tensor(), Conv2dParams::make(1, 1));
    benchmark::DoNotOptimize(y.data_ptr());
  }
  state.counters["TFLOP"] =
      benchmark::Counter(conv_flops(batch) * 1e-12 * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(BM_Conv2dGpu)
    ->ArgNames({"benchmark", "batch"})
    ->ArgsProduct({{0, 1}, {8, 32}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Conv2dCpu)
    ->ArgName("batch")
    ->Arg(1)
    ->Arg(4)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
