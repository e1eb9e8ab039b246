// Lab 02 benchmarks. The rubric compares pairs measured in the same run, as ratios of medians;
// a copy baseline moves exactly the bytes the kernel must move, so time ratio = bandwidth ratio:
//
//   BM_ReduceSum         reads 256 MiB            vs BM_DeviceCopy/128 (128 MiB read + written)
//   BM_Transpose         reads + writes 256 MiB   vs BM_DeviceCopy/256
//   BM_Softmax           reads + writes 256 MiB   vs BM_DeviceCopy/256   (8192 x 8192)
//   BM_LayerNorm         reads + writes 256 MiB   vs BM_DeviceCopy/256   (8192 x 8192)
//   BM_Sgemm/tiled vs BM_Sgemm/naive, BM_Sgemm/register_tiled vs BM_Sgemm/cublas (4096^3, FP32,
//                        TF32 off): TFLOP/s counters shown
//   BM_BiasGelu/fused vs BM_BiasGelu/unfused (8192 x 8192)
//
// Before every timed iteration the L2 cache is flushed (a buffer twice its size is written), so
// each kernel reads its inputs from HBM as in a real training step. GPU time comes from events
// with the device synchronised before each, so work on any stream is inside the timed interval
// (timed_loop, common/bench/gpu_timed_loop.h, shared by every lab).
// Inputs are random and fresh per run, and every benchmark checks its whole result (every
// element, against the core's reference with the tests' tolerances, or cuBLAS for SGEMM): a
// kernel that computes nothing, or only part of its output, fails; it is not fast.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "gtl/runtime/device.h"

#ifdef GTL_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "gpu_timed_loop.h"

#include "gtl/ops/activations.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/layernorm.h"
#include "gtl/ops/softmax.h"
#include "gtl/tensor/tensor.h"
#include "kernels.h"
#endif

namespace {

#ifdef GTL_WITH_CUDA

using gtl::Tensor;

using gtl::bench::skip_without_gpu;
using gtl::bench::timed_loop;

Tensor random_gpu(const gtl::Shape& shape, uint64_t seed, float lo = -1.f, float hi = 1.f) {
  gtl::Generator g(seed);
  return Tensor::uniform(shape, g, lo, hi, gtl::DType::Float32, gtl::Device::cuda(0));
}

uint64_t fresh_seed() {
  static uint64_t counter = 1000;
  return counter++;
}

// The first element where `got` and `want` differ by more than atol + rtol |want| ("" when none):
// every element, so a kernel that skips part of its output to look fast is caught.
std::string first_mismatch(const Tensor& got, const Tensor& want, double atol, double rtol) {
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  if (g.size() != w.size()) return "sizes differ";
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(double(g[i]) - w[i]) <= atol + rtol * std::fabs(double(w[i]))))
      return "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", expected " +
             std::to_string(w[i]);
  return "";
}

void check_all(benchmark::State& state, const std::string& what, const Tensor& got,
               const Tensor& want, double atol, double rtol) {
  const std::string diff = first_mismatch(got, want, atol, rtol);
  if (!diff.empty()) state.SkipWithError((what + " is wrong: " + diff).c_str());
}

void BM_DeviceCopy(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int64_t bytes = state.range(0) << 20;
  void *src, *dst;
  cudaMalloc(&src, bytes);
  cudaMalloc(&dst, bytes);
  cudaMemset(src, 1, bytes);
  timed_loop(state, [&] { cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr); });
  state.SetBytesProcessed(state.iterations() * bytes * 2);
  cudaFree(src), cudaFree(dst);
}
BENCHMARK(BM_DeviceCopy)->Arg(128)->Arg(256)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_ReduceSum(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int64_t n = int64_t{1} << 26;  // 256 MiB
  const Tensor x = random_gpu({n}, fresh_seed(), 0.f, 1.f);
  Tensor out = Tensor::zeros({1}, gtl::DType::Float32, gtl::Device::cuda(0));
  timed_loop(state, [&] { lab02::reduce_sum(x.data<float>(), out.data<float>(), n, nullptr); });
  state.SetBytesProcessed(state.iterations() * n * 4);
  // Against the exact sum of every element: float32 accumulation in any order stays within
  // 1e-5 relative (the tests' bound); a kernel that skips elements and scales up does not.
  double exact = 0;
  for (float v : x.to_vector()) exact += v;
  if (!(std::fabs(out.item() - exact) <= 1e-5 * exact))
    state.SkipWithError(("reduce_sum is wrong: got " + std::to_string(out.item()) +
                         ", the exact sum is " + std::to_string(exact))
                            .c_str());
}
BENCHMARK(BM_ReduceSum)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_Transpose(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const bool naive = state.range(0) == 0;
  state.SetLabel(naive ? "naive" : "tiled");
  const int n = 8192;
  const Tensor x = random_gpu({n, n}, fresh_seed());
  Tensor y = Tensor::zeros({n, n}, gtl::DType::Float32, gtl::Device::cuda(0));
  timed_loop(state, [&] {
    (naive ? lab02::transpose_naive : lab02::transpose)(x.data<float>(), y.data<float>(), n, n,
                                                        nullptr);
  });
  state.SetBytesProcessed(state.iterations() * int64_t{n} * n * 8);
  // A transpose moves values: every element exact.
  const std::vector<float> xv = x.to_vector(), yv = y.to_vector();
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c)
      if (!(yv[c * n + r] == xv[r * n + c])) {
        state.SkipWithError(
            ("transpose is wrong at y[" + std::to_string(c) + "][" + std::to_string(r) + "]")
                .c_str());
        return;
      }
}
BENCHMARK(BM_Transpose)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_Sgemm(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int version = static_cast<int>(state.range(0));
  static const char* names[] = {"naive", "tiled", "register_tiled", "cublas"};
  state.SetLabel(names[version]);
  const int n = 4096;
  const Tensor a = random_gpu({n, n}, fresh_seed()), b = random_gpu({n, n}, fresh_seed());
  Tensor c = Tensor::zeros({n, n}, gtl::DType::Float32, gtl::Device::cuda(0));
  Tensor reference = Tensor::zeros({n, n}, gtl::DType::Float32, gtl::Device::cuda(0));
  cublasHandle_t handle = nullptr;
  cublasCreate(&handle);
  cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);  // true FP32: TF32 off
  const float one = 1.f, zero = 0.f;
  timed_loop(state, [&] {
    switch (version) {
      case 0:
        lab02::sgemm_naive(a.data<float>(), b.data<float>(), c.data<float>(), n, n, n, nullptr);
        break;
      case 1:
        lab02::sgemm_tiled(a.data<float>(), b.data<float>(), c.data<float>(), n, n, n, nullptr);
        break;
      case 2:
        lab02::sgemm_register_tiled(a.data<float>(), b.data<float>(), c.data<float>(), n, n, n,
                                    nullptr);
        break;
      default:  // row-major C = A B is column-major C^T = B^T A^T
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b.data<float>(), n,
                    a.data<float>(), n, &zero, c.data<float>(), n);
    }
  });
  // Every element against cuBLAS (FP32, TF32 off): two summation orders differ by about
  // sqrt(k) eps, the tests' tolerance (1e-4 sqrt(k) absolute, 1e-4 relative).
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b.data<float>(), n, a.data<float>(),
              n, &zero, reference.data<float>(), n);
  cublasDestroy(handle);
  state.counters["TFLOP/s"] =
      benchmark::Counter(2.0 * n * n * n * state.iterations() * 1e-12, benchmark::Counter::kIsRate);
  check_all(state, "sgemm", c, reference, 1e-4 * std::sqrt(double(n)), 1e-4);
}
BENCHMARK(BM_Sgemm)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_Softmax(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int n = 8192;
  const Tensor x = random_gpu({n, n}, fresh_seed(), -5.f, 5.f);
  Tensor y = Tensor::zeros({n, n}, gtl::DType::Float32, gtl::Device::cuda(0));
  timed_loop(state, [&] { lab02::softmax(x.data<float>(), y.data<float>(), n, n, nullptr); });
  state.SetBytesProcessed(state.iterations() * int64_t{n} * n * 8);
  check_all(state, "softmax", y, gtl::ops::softmax(x.to(gtl::Device::cpu())), 1e-7, 1e-4);
}
BENCHMARK(BM_Softmax)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_LayerNorm(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int n = 8192;
  const Tensor x = random_gpu({n, n}, fresh_seed(), -5.f, 5.f);
  const Tensor w = Tensor::ones({n}, gtl::DType::Float32, gtl::Device::cuda(0));
  const Tensor b = Tensor::zeros({n}, gtl::DType::Float32, gtl::Device::cuda(0));
  Tensor y = Tensor::zeros({n, n}, gtl::DType::Float32, gtl::Device::cuda(0));
  Tensor mean = Tensor::zeros({n}, gtl::DType::Float32, gtl::Device::cuda(0));
  Tensor rstd = Tensor::zeros({n}, gtl::DType::Float32, gtl::Device::cuda(0));
  timed_loop(state, [&] {
    lab02::layernorm(x.data<float>(), w.data<float>(), b.data<float>(), y.data<float>(),
                     mean.data<float>(), rstd.data<float>(), n, n, 1e-5f, nullptr);
  });
  state.SetBytesProcessed(state.iterations() * int64_t{n} * n * 8);
  const gtl::Device cpu = gtl::Device::cpu();
  const auto expected = gtl::ops::layernorm_forward(x.to(cpu), w.to(cpu), b.to(cpu), 1e-5f);
  // The tests' tolerances for inputs without a mean offset.
  check_all(state, "layernorm's saved mean", mean, expected.mean, 1e-5, 1e-5);
  check_all(state, "layernorm's saved rstd", rstd, expected.rstd, 1e-5, 1e-3);
  check_all(state, "layernorm", y, expected.out, 1e-4, 1e-3);
}
BENCHMARK(BM_LayerNorm)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_BiasGelu(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const bool fused = state.range(0) == 1;
  state.SetLabel(fused ? "fused" : "unfused");
  const int n = 8192;
  const Tensor x = random_gpu({n, n}, fresh_seed(), -3.f, 3.f),
               bias = random_gpu({n}, fresh_seed());
  Tensor tmp = Tensor::zeros({n, n}, gtl::DType::Float32, gtl::Device::cuda(0));
  Tensor y = Tensor::full({n, n}, std::nan(""), gtl::DType::Float32, gtl::Device::cuda(0));
  timed_loop(state, [&] {
    if (fused) {
      lab02::bias_gelu_fused(x.data<float>(), bias.data<float>(), y.data<float>(), n, n, nullptr);
    } else {
      lab02::bias_gelu_unfused(x.data<float>(), bias.data<float>(), tmp.data<float>(),
                               y.data<float>(), n, n, nullptr);
    }
  });
  state.SetBytesProcessed(state.iterations() * int64_t{n} * n * 8);
  const gtl::Device cpu = gtl::Device::cpu();
  check_all(state, "bias + GELU", y, gtl::ops::gelu(gtl::ops::bias_add(x.to(cpu), bias.to(cpu))),
            1e-5, 1e-5);
}
BENCHMARK(BM_BiasGelu)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);

#else

void BM_Kernels(benchmark::State& state) {
  state.SkipWithError(("needs a CUDA GPU: " + gtl::cuda_unavailable_reason()).c_str());
}
BENCHMARK(BM_Kernels);

#endif  // GTL_WITH_CUDA

}  // namespace

BENCHMARK_MAIN();
