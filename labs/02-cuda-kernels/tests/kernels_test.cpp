// Lab 02 correctness checks: every kernel, naive baselines included, against the core's CPU
// reference (common/gtl/ops) on odd and edge sizes: n = 1, sizes that are not multiples of the
// block or tile, very long rows and large magnitudes. Outputs start as NaN, so an element a kernel
// never writes fails the comparison. Each test skips, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "gtl/ops/activations.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/layernorm.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/softmax.h"
#include "gtl_test.h"

#ifdef GTL_WITH_CUDA
#include "kernels.h"
#endif

namespace {

using gtl::Device;
using gtl::DType;
using gtl::Tensor;
using gtl::testing::expect_close;

[[maybe_unused]] const Device kGpu = Device::cuda(0);

[[maybe_unused]] Tensor nan_on_gpu(const gtl::Shape& shape) {
  return Tensor::full(shape, std::nan(""), DType::Float32, kGpu);
}

// Small integers: every product and every partial sum is exact in float32, whatever the order.
[[maybe_unused]] Tensor small_integers(const gtl::Shape& shape, uint64_t seed) {
  gtl::Generator g(seed);
  std::vector<float> v = Tensor::uniform(shape, g, -2.5f, 2.5f).to_vector();
  for (float& x : v) x = std::round(x);
  return Tensor::from_vector(v, shape);
}

#ifdef GTL_WITH_CUDA

float run_on_gpu(const Tensor& x_gpu, void (*fn)(const float*, float*, int64_t, cudaStream_t)) {
  Tensor out = nan_on_gpu({1});
  fn(x_gpu.data<float>(), out.data<float>(), x_gpu.numel(), nullptr);
  return out.item();
}

TEST(Reduce, EveryVersionSumsAnySize) {
  GTL_REQUIRE_GPU();
  const std::vector<std::pair<const char*, void (*)(const float*, float*, int64_t, cudaStream_t)>>
      versions = {{"naive (provided)", lab02::reduce_sum_naive},
                  {"TODO 1a shared-memory tree", lab02::reduce_sum_shared},
                  {"TODO 1b warp shuffles", lab02::reduce_sum_warp},
                  {"TODO 1c several elements per thread", lab02::reduce_sum}};
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{255}, int64_t{256}, int64_t{257},
                    int64_t{1000003}, (int64_t{1} << 24) + 3}) {
    gtl::Generator g(n);
    const Tensor x = Tensor::uniform({n}, g, -1.f, 1.f);
    double exact = 0, magnitude = 0;
    for (float v : x.to_vector()) exact += v, magnitude += std::fabs(v);
    // The same values one float past a 16-byte boundary: float4 loads need a fallback there
    // (on a GPU a misaligned float4 load is an error, "misaligned address").
    std::vector<float> shifted = x.to_vector();
    shifted.insert(shifted.begin(), 0.f);
    const Tensor shifted_gpu = Tensor::from_vector(shifted, {n + 1}).to(kGpu);
    for (const auto& [xg, offset] : {std::pair{x.to(kGpu), 0}, {shifted_gpu.slice(1, n + 1), 1}}) {
      for (const auto& [name, fn] : versions) {
        const float got = run_on_gpu(xg, fn);
        // float32 accumulation in any order: error bounded by ~n eps |x|; 1e-5 relative is ample.
        EXPECT_TRUE(std::fabs(got - exact) <= 1e-5 * magnitude + 1e-6)
            << name << ", n = " << n << ", input offset " << offset << " floats: got " << got
            << ", expected " << exact
            << " (NaN: *out never written; 0: nothing was added; far off: elements lost at block "
               "edges, or float4 loads from a misaligned input)";
      }
    }
  }
}

TEST(Reduce, IntegersSumExactly) {
  GTL_REQUIRE_GPU();
  const Tensor x = small_integers({1 << 20}, 3);
  double exact = 0;
  for (float v : x.to_vector()) exact += v;
  EXPECT_EQ(run_on_gpu(x.to(kGpu), lab02::reduce_sum), static_cast<float>(exact))
      << "TODO 1c: small integers sum exactly in float32";
}

TEST(Transpose, BothVersionsOnOddShapes) {
  GTL_REQUIRE_GPU();
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{
           {1, 1}, {1, 37}, {37, 1}, {33, 65}, {1024, 1000}, {4097, 31}}) {
    gtl::Generator g(rows * 7 + cols);
    const Tensor x = Tensor::uniform({rows, cols}, g);
    std::vector<float> expected(x.numel());
    const std::vector<float> xv = x.to_vector();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) expected[int64_t{c} * rows + r] = xv[int64_t{r} * cols + c];
    const Tensor xg = x.to(kGpu);
    for (bool tiled : {false, true}) {
      Tensor out = nan_on_gpu({cols, rows});
      (tiled ? lab02::transpose : lab02::transpose_naive)(xg.data<float>(), out.data<float>(), rows,
                                                          cols, nullptr);
      EXPECT_EQ(out.to_vector(), expected)
          << (tiled ? "TODO 2 tiled" : "naive") << " transpose of " << rows << "x" << cols
          << ": a transpose moves values, it must be exact (check the edge tiles)";
    }
  }
}

using SgemmFn = void (*)(const float*, const float*, float*, int, int, int, cudaStream_t);

const std::vector<std::pair<const char*, SgemmFn>> kSgemms = {
    {"naive (provided)", lab02::sgemm_naive},
    {"TODO 3a shared-memory tiles", lab02::sgemm_tiled},
    {"TODO 3b register tiles", lab02::sgemm_register_tiled}};

const std::vector<std::array<int, 3>> kGemmShapes = {{1, 1, 1},       {3, 5, 7},     {17, 33, 65},
                                                     {129, 127, 255}, {128, 128, 8}, {300, 200, 1},
                                                     {512, 512, 512}};

TEST(Sgemm, SmallIntegersGiveTheExactProduct) {
  GTL_REQUIRE_GPU();
  for (auto [m, n, k] : kGemmShapes) {
    const Tensor a = small_integers({m, k}, 1), b = small_integers({k, n}, 2);
    const std::vector<float> expected = gtl::ops::matmul(a, b).to_vector();
    const Tensor ag = a.to(kGpu), bg = b.to(kGpu);
    for (const auto& [name, fn] : kSgemms) {
      Tensor c = nan_on_gpu({m, n});
      fn(ag.data<float>(), bg.data<float>(), c.data<float>(), m, n, k, nullptr);
      EXPECT_EQ(c.to_vector(), expected)
          << name << ", M N K = " << m << " " << n << " " << k
          << ": integer products are exact in float32; a difference means a wrong index, a "
             "missing edge, or a tile loaded before __syncthreads";
    }
  }
}

TEST(Sgemm, RandomMatricesMatchTheCpu) {
  GTL_REQUIRE_GPU();
  for (auto [m, n, k] : kGemmShapes) {
    gtl::Generator g(m + n + k);
    const Tensor a = Tensor::uniform({m, k}, g, -1.f, 1.f),
                 b = Tensor::uniform({k, n}, g, -1.f, 1.f);
    const Tensor expected = gtl::ops::matmul(a, b);
    const Tensor ag = a.to(kGpu), bg = b.to(kGpu);
    for (const auto& [name, fn] : kSgemms) {
      Tensor c = nan_on_gpu({m, n});
      fn(ag.data<float>(), bg.data<float>(), c.data<float>(), m, n, k, nullptr);
      // FP32 with different summation orders: error grows like sqrt(k) eps.
      expect_close(c, expected, {1e-4 * std::sqrt(double(k)), 1e-4}, name);
    }
  }
}

TEST(Softmax, BothVersionsOnOddRowsLongRowsLargeAndMaskedLogits) {
  GTL_REQUIRE_GPU();
  for (auto [rows, cols, scale] : std::vector<std::tuple<int, int, float>>{
           {1, 1, 1.f}, {3, 7, 1.f}, {5, 1000, 3.f}, {2, 100000, 1.f}, {64, 4096, 1e4f}}) {
    gtl::Generator g(cols);
    std::vector<float> values = Tensor::uniform({rows, cols}, g, -scale, scale).to_vector();
    // Masked logits (-inf), as attention uses them, in the first and middle column: they get
    // probability 0 and must not turn the rest of the row into NaN.
    if (cols > 2)
      for (int r = 0; r < rows; ++r)
        values[int64_t{r} * cols] = values[int64_t{r} * cols + cols / 2] = -INFINITY;
    const Tensor x = Tensor::from_vector(values, {rows, cols});
    const Tensor expected = gtl::ops::softmax(x);
    const Tensor xg = x.to(kGpu);
    for (bool online : {false, true}) {
      Tensor y = nan_on_gpu({rows, cols});
      (online ? lab02::softmax : lab02::softmax_naive)(xg.data<float>(), y.data<float>(), rows,
                                                       cols, nullptr);
      expect_close(y, expected, {1e-7, 1e-4},
                   std::string(online ? "TODO 4 online softmax" : "naive softmax") + ", " +
                       std::to_string(rows) + "x" + std::to_string(cols) + ", logits up to " +
                       std::to_string(scale) +
                       " with some -inf (inf or NaN: subtract the row max before exp; a -inf "
                       "logit adds 0 to the sum, never exp(-inf - (-inf)))");
    }
  }
}

TEST(LayerNorm, BothVersionsMatchTheCpuWithSavedStatistics) {
  GTL_REQUIRE_GPU();
  for (auto [rows, cols, offset] : std::vector<std::tuple<int, int, float>>{
           {1, 1, 0.f}, {3, 7, 0.f}, {5, 1000, 0.f}, {2, 100000, 0.f}, {64, 768, 1e4f}}) {
    gtl::Generator g(cols + 1);
    const Tensor x =
        gtl::ops::add(Tensor::normal({rows, cols}, g), Tensor::full({rows, cols}, offset));
    const Tensor w = Tensor::uniform({cols}, g, 0.5f, 1.5f), b = Tensor::uniform({cols}, g);
    const auto expected = gtl::ops::layernorm_forward(x, w, b, 1e-5f);
    const Tensor xg = x.to(kGpu), wg = w.to(kGpu), bg = b.to(kGpu);
    for (bool fast : {false, true}) {
      Tensor y = nan_on_gpu({rows, cols}), mean = nan_on_gpu({rows}), rstd = nan_on_gpu({rows});
      (fast ? lab02::layernorm : lab02::layernorm_naive)(
          xg.data<float>(), wg.data<float>(), bg.data<float>(), y.data<float>(), mean.data<float>(),
          rstd.data<float>(), rows, cols, 1e-5f, nullptr);
      const std::string what = std::string(fast ? "TODO 5 layernorm" : "naive layernorm") + ", " +
                               std::to_string(rows) + "x" + std::to_string(cols) +
                               ", mean offset " + std::to_string(offset);
      // At a mean of 1e4, float32 resolves x to 1e-3 and the mean rounded to float is off by up
      // to half of that: any float32 kernel's (x - mean) * rstd * w is off by ~1e-3 here, while
      // E[x^2] - mean^2 is off by O(1). The output tolerance follows the offset.
      const double out_atol = offset > 0 ? 5e-3 : 1e-4;
      expect_close(mean, expected.mean, {1e-5, 1e-5}, what + ": saved mean");
      expect_close(rstd, expected.rstd, {1e-5, 1e-3},
                   what + ": saved rstd (large offsets: compute the variance from x - mean)");
      expect_close(y, expected.out, {out_atol, 1e-3}, what + ": output");
    }
  }
}

TEST(LayerNormBackward, StretchMatchesTheCpu) {
  GTL_REQUIRE_GPU();
  for (auto [rows, cols] :
       std::vector<std::pair<int, int>>{{1, 1}, {3, 7}, {5, 1000}, {300, 768}}) {
    gtl::Generator g(rows * 31 + cols);
    const Tensor x = Tensor::normal({rows, cols}, g), dy = Tensor::normal({rows, cols}, g);
    const Tensor w = Tensor::uniform({cols}, g, 0.5f, 1.5f), b = Tensor::uniform({cols}, g);
    const auto fwd = gtl::ops::layernorm_forward(x, w, b, 1e-5f);
    const auto expected = gtl::ops::layernorm_backward(dy, x, w, fwd.mean, fwd.rstd);
    const Tensor dyg = dy.to(kGpu), xg = x.to(kGpu), wg = w.to(kGpu), mg = fwd.mean.to(kGpu),
                 rg = fwd.rstd.to(kGpu);
    Tensor dx = nan_on_gpu({rows, cols}), dw = nan_on_gpu({cols}), db = nan_on_gpu({cols});
    lab02::layernorm_backward(dyg.data<float>(), xg.data<float>(), wg.data<float>(),
                              mg.data<float>(), rg.data<float>(), dx.data<float>(),
                              dw.data<float>(), db.data<float>(), rows, cols, nullptr);
    const std::string what =
        "TODO 5b layernorm backward, " + std::to_string(rows) + "x" + std::to_string(cols);
    expect_close(dx, expected.dx, {1e-4, 1e-3},
                 what +
                     ": dx (two row sums: mean of dxhat and of "
                     "dxhat * xhat)");
    // Sums over rows in float32: the error grows like sqrt(rows) eps.
    const double atol = 1e-5 * std::sqrt(double(rows)) + 1e-5;
    expect_close(dw, expected.dweight, {atol, 1e-4},
                 what + ": dweight = sum over rows of dy * xhat");
    expect_close(db, expected.dbias, {atol, 1e-4}, what + ": dbias = sum over rows of dy");
  }
}

TEST(BiasGelu, FusedAndUnfusedMatchTheCpu) {
  GTL_REQUIRE_GPU();
  for (auto [rows, cols] : std::vector<std::pair<int, int>>{{1, 1}, {3, 7}, {1000, 1003}}) {
    gtl::Generator g(rows + cols);
    const Tensor x = Tensor::normal({rows, cols}, g, 0.f, 3.f), bias = Tensor::normal({cols}, g);
    const Tensor expected = gtl::ops::gelu(gtl::ops::bias_add(x, bias));
    const Tensor xg = x.to(kGpu), bg = bias.to(kGpu);
    Tensor tmp = nan_on_gpu({rows, cols}), y = nan_on_gpu({rows, cols});
    lab02::bias_gelu_unfused(xg.data<float>(), bg.data<float>(), tmp.data<float>(), y.data<float>(),
                             rows, cols, nullptr);
    expect_close(y, expected, {1e-5, 1e-5}, "unfused bias + GELU (provided)");
    Tensor yf = nan_on_gpu({rows, cols});
    lab02::bias_gelu_fused(xg.data<float>(), bg.data<float>(), yf.data<float>(), rows, cols,
                           nullptr);
    expect_close(yf, expected, {1e-5, 1e-5},
                 "TODO 6 fused bias + GELU, " + std::to_string(rows) + "x" + std::to_string(cols));
  }
}

#else

TEST(Kernels, NeedTheCudaBackend) {
  GTEST_SKIP() << "needs a CUDA GPU: " << gtl::cuda_unavailable_reason();
}

#endif  // GTL_WITH_CUDA

}  // namespace
