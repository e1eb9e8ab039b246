// Lab 10, TODO 4's benchmarks: the tensor-core GEMMs against cuBLAS in the same run, 4096^3, bf16
// inputs, float32 output and accumulation (cublasGemmEx, CUBLAS_COMPUTE_32F):
//
//   BM_WmmaGemm/0   the given naive WMMA kernel (fragments from global memory)
//   BM_WmmaGemm/1   your tiled kernel (4a)
//   BM_WmmaGemm/2   your fast kernel (4b)
//   BM_WmmaGemm/3   cuBLAS
//
// TFLOP/s counters shown (2 m n k per call). Timing is common/bench/gpu_timed_loop.h's. Every
// benchmark checks its whole output against cuBLAS's (the tests check cuBLAS-independent
// correctness): a kernel that skips work fails, it is not fast.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "gtl/runtime/device.h"

#ifdef GTL_WITH_CUDA
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "gpu_timed_loop.h"
#include "gtl/tensor/tensor.h"
#include "tensor_core_gemm.h"
#endif

namespace {

#ifdef GTL_WITH_CUDA

using gtl::Tensor;
using gtl::bench::skip_without_gpu;
using gtl::bench::timed_loop;

constexpr int kSize = 4096;

// C = A B with row-major matrices: cuBLAS is column-major, so it computes C^T = B^T A^T.
void cublas_gemm(cublasHandle_t handle, const __nv_bfloat16* a, const __nv_bfloat16* b, float* c,
                 int m, int n, int k) {
  const float one = 1.f, zero = 0.f;
  cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, b, CUDA_R_16BF, n, a, CUDA_R_16BF,
               k, &zero, c, CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
}

void BM_WmmaGemm(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  int major = 0;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
  if (major < 8) {
    state.SkipWithError("needs bf16 tensor cores (sm_80 or newer)");
    return;
  }
  const int version = int(state.range(0));
  static const char* names[] = {"naive", "tiled (4a)", "fast (4b)", "cuBLAS"};
  state.SetLabel(names[version]);
  const int64_t n = kSize;
  gtl::Generator g(7);
  const Tensor a =
      Tensor::uniform({n, n}, g, -1.f, 1.f, gtl::DType::BFloat16, gtl::Device::cuda(0));
  const Tensor b =
      Tensor::uniform({n, n}, g, -1.f, 1.f, gtl::DType::BFloat16, gtl::Device::cuda(0));
  Tensor c = Tensor::zeros({n, n}, gtl::DType::Float32, gtl::Device::cuda(0));
  Tensor want = Tensor::zeros({n, n}, gtl::DType::Float32, gtl::Device::cuda(0));
  const auto* pa = static_cast<const __nv_bfloat16*>(a.data_ptr());
  const auto* pb = static_cast<const __nv_bfloat16*>(b.data_ptr());
  cublasHandle_t handle;
  cublasCreate(&handle);
  timed_loop(state, [&] {
    switch (version) {
      case 0:
        lab10::wmma_gemm_naive(pa, pb, c.data<float>(), kSize, kSize, kSize, nullptr);
        break;
      case 1:
        lab10::wmma_gemm_tiled(pa, pb, c.data<float>(), kSize, kSize, kSize, nullptr);
        break;
      case 2:
        lab10::wmma_gemm_fast(pa, pb, c.data<float>(), kSize, kSize, kSize, nullptr);
        break;
      default:
        cublas_gemm(handle, pa, pb, c.data<float>(), kSize, kSize, kSize);
    }
  });
  state.counters["TFLOP/s"] = benchmark::Counter(
      2.0 * n * n * n * double(state.iterations()) / 1e12, benchmark::Counter::kIsRate);
  cublas_gemm(handle, pa, pb, want.data<float>(), kSize, kSize, kSize);
  cublasDestroy(handle);
  // Two float32 sums of the same 4096 exact products, in two orders: each within the tests'
  // bound 2 (k + 1) u sum |a b| of the exact value (tests/gemm_cases.h), with sum |a b| about
  // k / 4 here: 5e-4, so within 1e-3 of each other; 1e-2 leaves room, while a tile skipped or
  // summed wrongly is off by about the values themselves (sqrt(k) / 3, about 20).
  const std::vector<float> got = c.to_vector(), expected = want.to_vector();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(got[i] - expected[i]) <= 1e-2)) {
      state.SkipWithError(("the output is wrong at element " + std::to_string(i) + ": " +
                           std::to_string(got[i]) + " against cuBLAS's " +
                           std::to_string(expected[i]))
                              .c_str());
      return;
    }
}
BENCHMARK(BM_WmmaGemm)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMicrosecond);

#else

void BM_WmmaGemm(benchmark::State& state) {
  state.SkipWithError(("needs a CUDA GPU: " + gtl::cuda_unavailable_reason()).c_str());
}
BENCHMARK(BM_WmmaGemm)->DenseRange(0, 3);

#endif  // GTL_WITH_CUDA

}  // namespace

BENCHMARK_MAIN();
