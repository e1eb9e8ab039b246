// Lab 02 correctness on the CPU emulator (common/emulator): your kernels, compiled as C++, run with
// one fiber per CUDA thread, so they are checked on any machine, GPU or not. The emulator runs
// every thread of a block up to each __syncthreads before any goes past it, stops at a barrier
// some threads never reach or a shuffle over exited lanes, and rejects the launches a GPU rejects
// (cudaGetLastError returns cudaErrorInvalidConfiguration). It says
// nothing about speed: that is measured on a GPU by lab02_bench.
//
// References are computed here in double precision. Outputs start as NaN, so an element a kernel
// never writes fails, and every comparison fails on NaN. Launches take three thread orders in
// turn (cuda_emulator.h, Schedule); GTL_EMULATOR_SCHEDULE=forward|reverse|warps fixes one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda_runtime.h"  // the emulator's: emu::KernelOutput
#include "gtl_test_seed.h"
#include "kernels.h"

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<float> uniform(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// The first element outside atol + rtol |expected|, described for the student; "" if none.
std::string first_mismatch(const std::vector<double>& expected, const float* got, double rtol,
                           double atol) {
  for (size_t i = 0; i < expected.size(); ++i) {
    const double err = std::fabs(expected[i] - got[i]);
    if (!(err <= atol + rtol * std::fabs(expected[i])))  // written so that NaN fails
      return "element " + std::to_string(i) + ": expected " + std::to_string(expected[i]) +
             ", got " + std::to_string(got[i]) +
             (std::isnan(got[i]) ? " (NaN: never written, or computed as NaN)" : "");
  }
  return "";
}

// Fails with the lesson first (the grader's one-line summary shows a failure's first line) and
// the evidence after it.
void expect_no_mismatch(const std::string& mismatch, const ::testing::Message& lesson) {
  if (!mismatch.empty()) ADD_FAILURE() << lesson << " [" << mismatch << "]";
}

using ReduceFn = void (*)(const float*, float*, int64_t, cudaStream_t);

TEST(EmulatedReduce, EveryVersionSumsAnySizeAndAlignment) {
  const std::vector<std::pair<const char*, ReduceFn>> versions = {
      {"naive (provided)", lab02::reduce_sum_naive},
      {"TODO 1a shared-memory tree", lab02::reduce_sum_shared},
      {"TODO 1b warp shuffles", lab02::reduce_sum_warp},
      {"TODO 1c several elements per thread", lab02::reduce_sum}};
  // Fixed edge sizes, then two drawn from the grading seed (gtl_test_seed.h) with a drawn offset.
  std::mt19937_64 g = gtl::test_seed::generator("EmulatedReduce");
  std::vector<std::pair<int64_t, int>> cases;
  for (int64_t n : {1, 2, 3, 5, 31, 33, 255, 256, 257, 1000, 4097, 70001})
    for (int offset : {0, 1}) cases.push_back({n, offset});
  for (int i = 0; i < 2; ++i)
    cases.push_back({gtl::test_seed::draw(g, 1, 100000), int(gtl::test_seed::draw(g, 0, 3))});
  for (const auto& [n, offset] : cases) {
    // offset 1: the input does not start on a 16-byte boundary (vector loads need a fallback)
    {
      const std::vector<float> buffer = uniform(n + offset, -1.f, 1.f, unsigned(n));
      const float* x = buffer.data() + offset;
      double exact = 0, magnitude = 0;
      for (int64_t i = 0; i < n; ++i) exact += x[i], magnitude += std::fabs(x[i]);
      for (const auto& [name, fn] : versions) {
        emu::KernelOutput<float> result(1, kNaN, "out");  // kernel threads must write it
        fn(x, result.data(), n, nullptr);
        const float out = result[0];
        if (!(std::fabs(out - exact) <= 1e-5 * magnitude + 1e-6))
          ADD_FAILURE()
              << name << ", n = " << n << ", input offset " << offset << " floats ("
              << gtl::test_seed::describe() << "): got " << out << ", expected " << exact
              << " (0: nothing was added; far off: elements lost at block edges, a __syncthreads "
                 "missing between tree levels in 1a, or a float4 path for a misaligned input in "
                 "1c)";
      }
    }
  }
}

TEST(EmulatedTranspose, BothVersionsOnOddShapes) {
  std::vector<std::pair<int, int>> shapes = {{1, 1},   {1, 37},  {37, 1},
                                             {33, 65}, {64, 64}, {100, 37}};
  std::mt19937_64 g = gtl::test_seed::generator("EmulatedTranspose");  // one more, seeded
  shapes.push_back({int(gtl::test_seed::draw(g, 1, 150)), int(gtl::test_seed::draw(g, 1, 150))});
  for (auto [rows, cols] : shapes) {
    const std::vector<float> in = uniform(size_t(rows) * cols, -1.f, 1.f, rows * 7 + cols);
    std::vector<double> expected(in.size());
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) expected[size_t(c) * rows + r] = in[size_t(r) * cols + c];
    for (bool tiled : {false, true}) {
      emu::KernelOutput<float> out(in.size(), kNaN, "out");  // kernel threads must write it
      (tiled ? lab02::transpose : lab02::transpose_naive)(in.data(), out.data(), rows, cols,
                                                          nullptr);
      const std::string bad = first_mismatch(expected, out.data(), 0, 0);
      expect_no_mismatch(bad, ::testing::Message()
                                  << (tiled ? "TODO 2 tiled" : "naive") << " transpose of " << rows
                                  << "x" << cols << " (" << gtl::test_seed::describe() << ")"
                                  << ": a transpose moves values exactly (check the edge tiles and "
                                  << "the __syncthreads between loading and storing the tile)");
    }
  }
}

using SgemmFn = void (*)(const float*, const float*, float*, int, int, int, cudaStream_t);

TEST(EmulatedSgemm, EveryVersionOnEdgeShapes) {
  const std::vector<std::pair<const char*, SgemmFn>> versions = {
      {"naive (provided)", lab02::sgemm_naive},
      {"TODO 3a shared-memory tiles", lab02::sgemm_tiled},
      {"TODO 3b register tiles", lab02::sgemm_register_tiled}};
  std::vector<std::tuple<int, int, int>> shapes = {{1, 1, 1},     {7, 5, 3},     {33, 65, 17},
                                                   {128, 128, 8}, {129, 131, 9}, {200, 130, 70}};
  std::mt19937_64 g = gtl::test_seed::generator("EmulatedSgemm");  // one more, seeded
  shapes.push_back({int(gtl::test_seed::draw(g, 1, 160)), int(gtl::test_seed::draw(g, 1, 160)),
                    int(gtl::test_seed::draw(g, 1, 80))});
  for (auto [m, n, k] : shapes) {
    const std::vector<float> a = uniform(size_t(m) * k, -1.f, 1.f, 1),
                             b = uniform(size_t(k) * n, -1.f, 1.f, 2);
    std::vector<double> expected(size_t(m) * n, 0.0);
    for (int i = 0; i < m; ++i)
      for (int p = 0; p < k; ++p)
        for (int j = 0; j < n; ++j)
          expected[size_t(i) * n + j] += double(a[size_t(i) * k + p]) * b[size_t(p) * n + j];
    for (const auto& [name, fn] : versions) {
      // One guard element past the end; written only by kernel threads (emu::KernelOutput).
      emu::KernelOutput<float> c(expected.size() + 1, kNaN, "C");
      fn(a.data(), b.data(), c.data(), m, n, k, nullptr);
      const std::string bad = first_mismatch(expected, c.data(), 1e-4, 1e-5 * k);
      expect_no_mismatch(
          bad, ::testing::Message()
                   << name << ", M N K = " << m << " " << n << " " << k << " ("
                   << gtl::test_seed::describe() << ")"
                   << ": a wrong index, a missing edge (zero-fill the tiles past M, N, K), "
                   << "or a tile overwritten before every thread has used it (the "
                   << "__syncthreads at the end of each k step)");
      if (!std::isnan(c.back()))
        ADD_FAILURE() << name << " wrote past the end of C (mask the stores)";
    }
  }
}

std::vector<double> softmax_reference(const std::vector<float>& x, int rows, int cols) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const float* xr = x.data() + size_t(r) * cols;
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, double(xr[c]));
    for (int c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    for (int c = 0; c < cols; ++c) y[size_t(r) * cols + c] = std::exp(xr[c] - m) / s;
  }
  return y;
}

TEST(EmulatedSoftmax, BothVersionsOnOddRowsLongRowsLargeAndMaskedLogits) {
  for (auto [rows, cols, scale] : std::vector<std::tuple<int, int, float>>{{1, 1, 1.f},
                                                                           {3, 7, 1.f},
                                                                           {5, 33, 1e4f},
                                                                           {4, 1000, 3.f},
                                                                           {2, 8192, 1e4f},
                                                                           {3, 257, 1.f}}) {
    std::vector<float> x = uniform(size_t(rows) * cols, -scale, scale, cols);
    // Masked logits (-inf), as attention uses them: they get probability 0, and must not turn
    // the rest of the row into NaN. The first element of a row is the hardest case.
    if (cols > 2)
      for (int r = 0; r < rows; ++r)
        x[size_t(r) * cols] = x[size_t(r) * cols + cols / 2] = -INFINITY;
    const std::vector<double> expected = softmax_reference(x, rows, cols);
    for (bool online : {false, true}) {
      std::vector<float> y(x.size(), kNaN);
      (online ? lab02::softmax : lab02::softmax_naive)(x.data(), y.data(), rows, cols, nullptr);
      const std::string bad = first_mismatch(expected, y.data(), 1e-4, 1e-7);
      expect_no_mismatch(
          bad, ::testing::Message()
                   << (online ? "TODO 4 online softmax" : "naive softmax") << ", " << rows << "x"
                   << cols << ", logits up to " << scale << " with some -inf: inf "
                   << "or NaN means exp of a large logit (subtract the running max) or "
                   << "exp(-inf - (-inf)) (a -inf logit adds 0 to the sum); finite but "
                   << "wrong means elements counted twice or missed (the loop step is "
                   << "kUnroll * kBlock) or a barrier missing in block_reduce (check "
                   << "EmulatedReduce first)");
    }
  }
}

TEST(EmulatedLayerNorm, BothVersionsWithSavedStatistics) {
  const float eps = 1e-5f;
  for (auto [rows, cols, offset] : std::vector<std::tuple<int, int, float>>{{1, 1, 0.f},
                                                                            {3, 2, 0.f},
                                                                            {5, 33, 0.f},
                                                                            {4, 1000, 0.f},
                                                                            {2, 8192, 0.f},
                                                                            {3, 768, 1e4f}}) {
    const std::vector<float> x = uniform(size_t(rows) * cols, offset - 1, offset + 1, cols),
                             w = uniform(cols, 0.5f, 1.5f, 3), b = uniform(cols, -1.f, 1.f, 4);
    std::vector<double> expected(x.size()), expected_mean(rows), expected_rstd(rows);
    for (int r = 0; r < rows; ++r) {
      const float* xr = x.data() + size_t(r) * cols;
      double mean = 0, var = 0;
      for (int c = 0; c < cols; ++c) mean += xr[c];
      mean /= cols;
      for (int c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
      const double rstd = 1 / std::sqrt(var / cols + eps);
      expected_mean[r] = mean, expected_rstd[r] = rstd;
      for (int c = 0; c < cols; ++c)
        expected[size_t(r) * cols + c] = (xr[c] - mean) * rstd * w[c] + b[c];
    }
    for (bool fast : {false, true}) {
      std::vector<float> y(x.size(), kNaN), mean(rows, kNaN), rstd(rows, kNaN);
      (fast ? lab02::layernorm : lab02::layernorm_naive)(x.data(), w.data(), b.data(), y.data(),
                                                         mean.data(), rstd.data(), rows, cols, eps,
                                                         nullptr);
      const std::string what = std::string(fast ? "TODO 5 layernorm" : "naive layernorm") + ", " +
                               std::to_string(rows) + "x" + std::to_string(cols) +
                               ", mean offset " + std::to_string(offset);
      // At a mean of 1e4, float32 resolves x to 1e-3 and the mean rounded to float is off by up
      // to half of that: (x - mean) * rstd * w is off by ~2e-3 in any float32 kernel (rstd ~1.7
      // here), while E[x^2] - mean^2 is off by O(1). The tolerance follows the offset.
      const double tol = offset > 0 ? 5e-3 : 1e-4;
      expect_no_mismatch(first_mismatch(expected_mean, mean.data(), 1e-5, 1e-6),
                         ::testing::Message() << what << ": mean");
      expect_no_mismatch(
          first_mismatch(expected_rstd, rstd.data(), tol, 1e-6),
          ::testing::Message()
              << what << ": rstd (large offsets: compute the variance from x - mean, not E[x^2] - "
              << "mean^2)");
      expect_no_mismatch(first_mismatch(expected, y.data(), tol, tol), ::testing::Message()
                                                                           << what << ": output");
    }
  }
}

TEST(EmulatedLayerNormBackward, StretchStep) {
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{1, 1}, {3, 7}, {5, 1000}, {40, 257}}) {
    const std::vector<float> x = uniform(size_t(rows) * cols, -2.f, 2.f, rows),
                             dy = uniform(size_t(rows) * cols, -1.f, 1.f, cols),
                             w = uniform(cols, 0.5f, 1.5f, 5);
    std::vector<float> mean(rows), rstd(rows);
    std::vector<double> dx(x.size()), dw(cols, 0.0), db(cols, 0.0);
    for (int r = 0; r < rows; ++r) {
      const float* xr = x.data() + size_t(r) * cols;
      const float* dyr = dy.data() + size_t(r) * cols;
      double m = 0, var = 0;
      for (int c = 0; c < cols; ++c) m += xr[c];
      m /= cols;
      for (int c = 0; c < cols; ++c) var += (xr[c] - m) * (xr[c] - m);
      mean[r] = float(m), rstd[r] = float(1 / std::sqrt(var / cols + 1e-5));
      double sum_dxhat = 0, sum_dxhat_xhat = 0;
      for (int c = 0; c < cols; ++c) {
        const double xhat = (xr[c] - double(mean[r])) * rstd[r];
        sum_dxhat += double(dyr[c]) * w[c];
        sum_dxhat_xhat += double(dyr[c]) * w[c] * xhat;
        dw[c] += dyr[c] * xhat;
        db[c] += dyr[c];
      }
      for (int c = 0; c < cols; ++c) {
        const double xhat = (xr[c] - double(mean[r])) * rstd[r];
        dx[size_t(r) * cols + c] =
            rstd[r] * (double(dyr[c]) * w[c] - sum_dxhat / cols - xhat * sum_dxhat_xhat / cols);
      }
    }
    std::vector<float> got_dx(x.size(), kNaN), got_dw(cols, kNaN), got_db(cols, kNaN);
    lab02::layernorm_backward(dy.data(), x.data(), w.data(), mean.data(), rstd.data(),
                              got_dx.data(), got_dw.data(), got_db.data(), rows, cols, nullptr);
    const std::string what =
        "TODO 5b layernorm backward, " + std::to_string(rows) + "x" + std::to_string(cols);
    expect_no_mismatch(first_mismatch(dx, got_dx.data(), 1e-3, 1e-4),
                       ::testing::Message()
                           << what
                           << ": dx (two row sums: the means of dxhat and of dxhat * xhat)");
    expect_no_mismatch(
        first_mismatch(dw, got_dw.data(), 1e-4, 1e-5 * std::sqrt(double(rows)) + 1e-5),
        ::testing::Message() << what << ": dweight = sum over rows of dy * xhat");
    expect_no_mismatch(
        first_mismatch(db, got_db.data(), 1e-4, 1e-5 * std::sqrt(double(rows)) + 1e-5),
        ::testing::Message() << what << ": dbias = sum over rows of dy");
  }
}

TEST(EmulatedBiasGelu, FusedAndUnfused) {
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{1, 1}, {3, 5}, {17, 1000}}) {
    const std::vector<float> x = uniform(size_t(rows) * cols, -4.f, 4.f, rows),
                             bias = uniform(cols, -1.f, 1.f, cols);
    std::vector<double> expected(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = double(x[i]) + bias[i % cols];
      expected[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    }
    std::vector<float> tmp(x.size(), kNaN), y(x.size(), kNaN), fused(x.size(), kNaN);
    lab02::bias_gelu_unfused(x.data(), bias.data(), tmp.data(), y.data(), rows, cols, nullptr);
    expect_no_mismatch(first_mismatch(expected, y.data(), 1e-5, 1e-6), ::testing::Message()
                                                                           << "unfused (provided)");
    lab02::bias_gelu_fused(x.data(), bias.data(), fused.data(), rows, cols, nullptr);
    expect_no_mismatch(first_mismatch(expected, fused.data(), 1e-5, 1e-6),
                       ::testing::Message() << "TODO 6 fused bias + GELU, " << rows << "x" << cols
                                            << ": y[i] = gelu(x[i] + bias[i % cols]) for every i "
                                               "(a grid-stride loop covers any size)");
  }
}

}  // namespace
