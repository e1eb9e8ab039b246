// ops::conv2d_* on the GPU (cuDNN) against the CPU backend (im2col + OpenBLAS), which
// conv2d_test.cpp checks against the loops and finite differences. Skips without a GPU.
//
// Tolerances (values uniform in [-1, 1], at most 36 products per output):
//   float32, TF32 off   atol 1e-4, rtol 1e-4 (different algorithms sum in different orders)
//   float32, TF32 on    atol 2e-2, rtol 1e-2 (inputs rounded to 10 mantissa bits)
//   float16 / bfloat16  atol 2e-3 / 2e-2, rtol 2^-9 / 2^-6 (inputs are the same rounded values
//                       on both sides; both round a float32 result once, and may disagree by an
//                       ulp; weight gradients sum N*P*Q products, so the looser atol)
// Heuristic and benchmark mode may pick different algorithms: each is compared to the CPU, and
// the two to each other, at the float32 tolerance.
#include <string>
#include <vector>

#include "gemm_conv_reference.h"
#include "gtl/ops/conv2d.h"
#include "gtl/ops/math_mode.h"
#include "gtl_test.h"

namespace {

using gtl::Device;
using gtl::DType;
using gtl::Generator;
using gtl::Shape;
using gtl::Tensor;
using gtl::ops::Conv2dParams;
using gtl::testing::ConvCase;
using gtl::testing::expect_close;
using gtl::testing::Tolerance;
namespace ops = gtl::ops;

const Device kGpu = Device::cuda(0);

const std::vector<ConvCase> kCases = {
    {{2, 3, 7, 9}, {4, 3, 3, 3}, Conv2dParams::make(1, 1)},
    {{1, 2, 8, 7}, {3, 2, 3, 3}, Conv2dParams::make(2, 1)},
    {{2, 3, 5, 5}, {2, 3, 1, 1}, Conv2dParams::make(1, 0)},
    {{3, 2, 9, 5}, {4, 2, 2, 3}, Conv2dParams{2, 1, 1, 0}},
    {{4, 16, 14, 14}, {8, 16, 3, 3}, Conv2dParams::make(1, 1)},  // big enough for tensor cores
};

struct Grads {
  Tensor y, dx, dw, db;
};

// Forward and the three backward passes on x's device; results copied back to the CPU.
Grads run_all(const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& g,
              const ConvCase& c) {
  return {ops::conv2d_forward(x, w, b, c.p).to(Device::cpu()),
          ops::conv2d_backward_data(g, w, c.x, c.p).to(Device::cpu()),
          ops::conv2d_backward_weight(g, x, c.w, c.p).to(Device::cpu()),
          ops::conv2d_backward_bias(g).to(Device::cpu())};
}

void expect_grads_close(const Grads& got, const Grads& want, Tolerance tol,
                        const std::string& what) {
  expect_close(got.y, want.y, tol, what + ": forward y");
  expect_close(got.dx, want.dx, tol, what + ": backward data dL/dx");
  expect_close(got.dw, want.dw, tol, what + ": backward weight dL/dw");
  expect_close(got.db, want.db, tol, what + ": backward bias dL/db");
}

void check_against_cpu(DType dtype, bool tf32, bool benchmark, Tolerance tol, uint64_t seed) {
  ops::ScopedTF32 tf32_mode(tf32);
  ops::ScopedCudnnBenchmark bench_mode(benchmark);
  Generator gen(seed);
  for (const ConvCase& c : kCases) {
    Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f, dtype);
    Tensor w = Tensor::uniform(c.w, gen, -1.f, 1.f, dtype);
    Tensor b = Tensor::uniform({c.w[0]}, gen, -1.f, 1.f, dtype);
    Tensor g = Tensor::uniform(ops::conv2d_output_shape(c.x, c.w, c.p), gen, -1.f, 1.f, dtype);
    const Grads cpu = run_all(x, w, b, g, c);
    const Grads gpu = run_all(x.to(kGpu), w.to(kGpu), b.to(kGpu), g.to(kGpu), c);
    expect_grads_close(gpu, cpu, tol,
                       std::string(gtl::dtype_name(dtype)) + (tf32 ? " TF32" : "") +
                           (benchmark ? " benchmark mode" : " heuristic") + ", " + c.str() +
                           " (cuDNN vs im2col + GEMM)");
  }
}

TEST(Conv2dCuda, Float32MatchesCpu) {
  GTL_REQUIRE_GPU();
  check_against_cpu(DType::Float32, false, false, {1e-4, 1e-4}, 40);
}

TEST(Conv2dCuda, Tf32MatchesCpuLoosely) {
  GTL_REQUIRE_GPU();
  check_against_cpu(DType::Float32, true, false, {2e-2, 1e-2}, 41);
}

TEST(Conv2dCuda, HalfTypesMatchCpu) {
  GTL_REQUIRE_GPU();
  check_against_cpu(DType::Float16, false, false, {2e-3, 0x1p-9}, 42);
  check_against_cpu(DType::BFloat16, false, false, {2e-2, 0x1p-6}, 43);
}

TEST(Conv2dCuda, BenchmarkModeMatchesCpuAndHeuristic) {
  GTL_REQUIRE_GPU();
  check_against_cpu(DType::Float32, false, true, {1e-4, 1e-4}, 44);
  Generator gen(45);
  for (const ConvCase& c : kCases) {
    Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f).to(kGpu);
    Tensor w = Tensor::uniform(c.w, gen, -1.f, 1.f).to(kGpu);
    Tensor b = Tensor::uniform({c.w[0]}, gen, -1.f, 1.f).to(kGpu);
    Tensor g = Tensor::uniform(ops::conv2d_output_shape(c.x, c.w, c.p), gen, -1.f, 1.f).to(kGpu);
    Grads heuristic, measured, cached;
    {
      ops::ScopedCudnnBenchmark mode(false);
      heuristic = run_all(x, w, b, g, c);
    }
    {
      ops::ScopedCudnnBenchmark mode(true);
      measured = run_all(x, w, b, g, c);
      cached = run_all(x, w, b, g, c);  // second call: the algorithm comes from the cache
    }
    expect_grads_close(measured, heuristic, {1e-4, 1e-4},
                       "benchmark mode vs heuristic, " + c.str());
    // The same algorithm again, from the cache. Some cuDNN algorithms add with atomics, so the
    // float32 tolerance rather than bit equality.
    expect_grads_close(cached, measured, {1e-4, 1e-4},
                       "benchmark mode, cached algorithm vs first call, " + c.str());
  }
}

}  // namespace
