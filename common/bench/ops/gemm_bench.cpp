// GEMM throughput in one run, so a speedup table can be read off directly:
//
// clang-format off
//   BM_GemmGpu/<mode>/<n>     ops::matmul, square n x n x n, on the GPU, mode fp32 (TF32 off),
//                             tf32, bf16, fp16 (float32 accumulation), n = 1024, 2048, 4096
//   BM_GemmCpu/<n>            ops::matmul on the CPU (OpenBLAS sgemm, all cores), n = 256..1024
//   BM_MatmulVsRawCublas/<n>  host time of back-to-back calls: ops::matmul_out vs cublasSgemm on
//                             the same buffers and stream; counter ratio_vs_raw_cublas is our
//                             wrapper's cost (checks, handle lookup) relative to the bare call
// clang-format on
//
// Counter TFLOP (a rate, so printed as TFLOP/s): 2 n^3 per GEMM divided by the measured time
// (benchmark::Counter::kIsRate).
// GPU times come from CUDA events around each GEMM (UseManualTime): host timers would measure
// only the launch. GPU benchmarks skip with the reason when no GPU is present.
//
//   ./ops_gemm_bench --benchmark_filter=Gemm     # the throughput table
// Reference figures (H100, PyTorch, docs/results/reference-figures.md): 4096^3 fp32 50, tf32 325,
// bf16 667, fp16 660 TFLOP/s.
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "gtl/ops/math_mode.h"
#include "gtl/ops/matmul.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"
#include "gtl/tensor/tensor.h"

#ifdef GTL_WITH_CUDA
#include <cublas_v2.h>
#endif

namespace {

using gtl::Device;
using gtl::DType;
using gtl::Tensor;

enum Mode { kFp32, kTf32, kBf16, kFp16 };
const char* const kModeNames[] = {"fp32", "tf32", "bf16", "fp16"};

void set_flops(benchmark::State& state, int64_t n) {
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  state.counters["TFLOP"] = benchmark::Counter(
      flops * 1e-12 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_GemmGpu(benchmark::State& state) {
  if (!gtl::cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + gtl::cuda_unavailable_reason()).c_str());
    return;
  }
  const auto mode = static_cast<Mode>(state.range(0));
  const int64_t n = state.range(1);
  const DType dtype = mode == kBf16   ? DType::BFloat16
                      : mode == kFp16 ? DType::Float16
                                      : DType::Float32;
  gtl::ops::ScopedTF32 tf32(mode == kTf32);
  gtl::Generator gen(1);
  const Device gpu = Device::cuda(0);
  Tensor a = Tensor::uniform({n, n}, gen, -1.f, 1.f, dtype, gpu);
  Tensor b = Tensor::uniform({n, n}, gen, -1.f, 1.f, dtype, gpu);
  Tensor c = Tensor::empty({n, n}, dtype, gpu);
  gtl::ops::matmul_out(a, b, c);  // warm-up: handle creation, kernel selection
  gtl::GpuTimer timer(gtl::current_stream());
  for (auto _ : state) {
    timer.start();
    gtl::ops::matmul_out(a, b, c);
    timer.stop();
    state.SetIterationTime(timer.elapsed_ms() * 1e-3);
  }
  state.SetLabel(kModeNames[mode]);
  set_flops(state, n);
}

void BM_GemmCpu(benchmark::State& state) {
  const int64_t n = state.range(0);
  gtl::Generator gen(2);
  Tensor a = Tensor::uniform({n, n}, gen, -1.f, 1.f);
  Tensor b = Tensor::uniform({n, n}, gen, -1.f, 1.f);
  Tensor c = Tensor::empty({n, n});
  gtl::ops::matmul_out(a, b, c);
  for (auto _ : state) {
    gtl::ops::matmul_out(a, b, c);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.SetLabel("fp32 OpenBLAS");
  set_flops(state, n);
}

void BM_MatmulVsRawCublas(benchmark::State& state) {
#ifdef GTL_WITH_CUDA
  if (!gtl::cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + gtl::cuda_unavailable_reason()).c_str());
    return;
  }
  const int64_t n = state.range(0);
  const int calls = 50;
  gtl::ops::ScopedTF32 tf32(false);
  gtl::Generator gen(3);
  const Device gpu = Device::cuda(0);
  Tensor a = Tensor::uniform({n, n}, gen, -1.f, 1.f, DType::Float32, gpu);
  Tensor b = Tensor::uniform({n, n}, gen, -1.f, 1.f, DType::Float32, gpu);
  Tensor c = Tensor::empty({n, n}, DType::Float32, gpu);
  cublasHandle_t raw = nullptr;
  if (cublasCreate(&raw) != CUBLAS_STATUS_SUCCESS ||
      cublasSetStream(raw, gtl::current_stream().handle()) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cublasCreate failed");
    return;
  }
  const int ni = static_cast<int>(n);
  const float one = 1.f, zero = 0.f;
  // The same row-major swap as matmul.cu: C^T = B^T A^T in cuBLAS's column-major view.
  const auto raw_gemm = [&] {
    (void)cublasSgemm(raw, CUBLAS_OP_N, CUBLAS_OP_N, ni, ni, ni, &one, b.data<float>(), ni,
                      a.data<float>(), ni, &zero, c.data<float>(), ni);
  };
  const auto ours = [&] { gtl::ops::matmul_out(a, b, c); };
  // Wall time of `calls` back-to-back calls and a final synchronize, in seconds.
  const auto time_of = [&](const auto& gemm) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) gemm();
    gtl::device_synchronize();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  time_of(ours);  // warm-up both
  time_of(raw_gemm);
  double ours_s = 0, raw_s = 0;
  for (auto _ : state) {
    const double o = time_of(ours);
    const double r = time_of(raw_gemm);
    ours_s += o;
    raw_s += r;
    state.SetIterationTime(o);
  }
  cublasDestroy(raw);
  state.counters["ratio_vs_raw_cublas"] = ours_s / raw_s;
  state.counters["us_per_call_ours"] =
      ours_s * 1e6 / (calls * static_cast<double>(state.iterations()));
  state.counters["us_per_call_raw"] =
      raw_s * 1e6 / (calls * static_cast<double>(state.iterations()));
#else
  state.SkipWithError(("needs a CUDA GPU: " + gtl::cuda_unavailable_reason()).c_str());
#endif
}

}  // namespace

BENCHMARK(BM_GemmGpu)
    ->ArgNames({"mode", "n"})
    ->ArgsProduct({{kFp32, kTf32, kBf16, kFp16}, {1024, 2048, 4096}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_GemmCpu)
    ->ArgName("n")
    ->Arg(256)
    ->Arg(512)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MatmulVsRawCublas)
    ->ArgName("n")
    ->Arg(64)
    ->Arg(1024)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
