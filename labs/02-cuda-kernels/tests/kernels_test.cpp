// Lab 02 correctness checks: every kernel, naive baselines included, against the core's CPU
// reference (common/gtl/ops) on odd and edge sizes: n = 1, sizes that are not multiples of the
// block or tile, very long rows and large magnitudes. Outputs start as NaN, so an element a kernel
// never writes fails the comparison. Each test skips, with the reason, without a GPU. The inputs
// are shared with the lab's judge (kernel_gpu_cases.h), and each test records what your kernels
// computed for it (gtl_judge_output.h).
//
// TODO 1c's kernel is tested in reduce_final_test.cpp, built with the reference block reduction,
// so that it passes as soon as 1c is right, whatever the state of 1b.
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
#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "kernel_gpu_cases.h"

#ifdef GTL_WITH_CUDA
#include "kernels.h"
#include "reduce_gpu_check.h"
#endif

namespace {

using gtl::Device;
using gtl::DType;
using gtl::Tensor;
using gtl::testing::expect_close;
using namespace lab02_gpu_cases;

[[maybe_unused]] const Device kGpu = Device::cuda(0);

[[maybe_unused]] Tensor nan_on_gpu(const gtl::Shape& shape) {
  return Tensor::full(shape, std::nan(""), DType::Float32, kGpu);
}

#ifdef GTL_WITH_CUDA

TEST(Reduce, SharedMemoryTree) {
  GTL_REQUIRE_GPU();
  expect_gpu_reduces_every_size("Reduce.SharedMemoryTree", "TODO 1a shared-memory tree",
                                lab02::reduce_sum_shared);
}

TEST(Reduce, WarpShuffles) {
  GTL_REQUIRE_GPU();
  expect_gpu_reduces_every_size("Reduce.WarpShuffles", "TODO 1b warp shuffles",
                                lab02::reduce_sum_warp);
}

TEST(Reduce, NaiveBaseline) {
  GTL_REQUIRE_GPU();
  expect_gpu_reduces_every_size("Reduce.NaiveBaseline", "naive (provided)",
                                lab02::reduce_sum_naive);
}

TEST(Transpose, BothVersionsOnOddShapes) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("Transpose.BothVersionsOnOddShapes");
  for (auto [rows, cols] : transpose_shapes()) {
    const Tensor x = transpose_input(rows, cols);
    std::vector<float> expected(x.numel());
    const std::vector<float> xv = x.to_vector();
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) expected[int64_t{c} * rows + r] = xv[int64_t{r} * cols + c];
    const Tensor xg = x.to(kGpu);
    for (bool tiled : {false, true}) {
      Tensor out = nan_on_gpu({cols, rows});
      (tiled ? lab02::transpose : lab02::transpose_naive)(xg.data<float>(), out.data<float>(), rows,
                                                          cols, nullptr);
      const std::vector<float> got = out.to_vector();
      if (tiled) recorded.record_digest(got.data(), got.size());
      EXPECT_EQ(got, expected)
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

TEST(Sgemm, SmallIntegersGiveTheExactProduct) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("Sgemm.SmallIntegersGiveTheExactProduct");
  for (auto [m, n, k] : gemm_shapes()) {
    const Tensor a = small_integers({m, k}, 1), b = small_integers({k, n}, 2);
    const std::vector<float> expected = gtl::ops::matmul(a, b).to_vector();
    const Tensor ag = a.to(kGpu), bg = b.to(kGpu);
    for (const auto& [name, fn] : kSgemms) {
      Tensor c = nan_on_gpu({m, n});
      fn(ag.data<float>(), bg.data<float>(), c.data<float>(), m, n, k, nullptr);
      const std::vector<float> got = c.to_vector();
      if (fn != lab02::sgemm_naive) recorded.record_digest(got.data(), got.size());
      EXPECT_EQ(got, expected)
          << name << ", M N K = " << m << " " << n << " " << k
          << ": integer products are exact in float32; a difference means a wrong index, a "
             "missing edge, or a tile loaded before __syncthreads";
    }
  }
}

TEST(Sgemm, RandomMatricesMatchTheCpu) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("Sgemm.RandomMatricesMatchTheCpu");
  for (auto [m, n, k] : gemm_shapes()) {
    const auto [a, b] = gemm_random(m, n, k);
    const Tensor expected = gtl::ops::matmul(a, b);
    const Tensor ag = a.to(kGpu), bg = b.to(kGpu);
    for (const auto& [name, fn] : kSgemms) {
      Tensor c = nan_on_gpu({m, n});
      fn(ag.data<float>(), bg.data<float>(), c.data<float>(), m, n, k, nullptr);
      if (fn != lab02::sgemm_naive) recorded.record_all(c.to_vector());
      // FP32 with different summation orders: error grows like sqrt(k) eps.
      expect_close(c, expected, {1e-4 * std::sqrt(double(k)), 1e-4}, name);
    }
  }
}

TEST(Softmax, BothVersionsOnOddRowsLongRowsLargeAndMaskedLogits) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("Softmax.BothVersionsOnOddRowsLongRowsLargeAndMaskedLogits");
  for (auto [rows, cols, scale] : softmax_cases()) {
    // Masked logits (-inf), as attention uses them, in the first and middle column: they get
    // probability 0 and must not turn the rest of the row into NaN.
    const Tensor x = softmax_input(rows, cols, scale);
    const Tensor expected = gtl::ops::softmax(x);
    const Tensor xg = x.to(kGpu);
    for (bool online : {false, true}) {
      Tensor y = nan_on_gpu({rows, cols});
      (online ? lab02::softmax : lab02::softmax_naive)(xg.data<float>(), y.data<float>(), rows,
                                                       cols, nullptr);
      if (online) recorded.record_all(y.to_vector());
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
  gtl::judge::Outputs recorded("LayerNorm.BothVersionsMatchTheCpuWithSavedStatistics");
  for (auto [rows, cols, offset] : layernorm_cases()) {
    const auto [x, w, b] = layernorm_input(rows, cols, offset);
    const auto expected = gtl::ops::layernorm_forward(x, w, b, 1e-5f);
    const Tensor xg = x.to(kGpu), wg = w.to(kGpu), bg = b.to(kGpu);
    for (bool fast : {false, true}) {
      Tensor y = nan_on_gpu({rows, cols}), mean = nan_on_gpu({rows}), rstd = nan_on_gpu({rows});
      (fast ? lab02::layernorm : lab02::layernorm_naive)(
          xg.data<float>(), wg.data<float>(), bg.data<float>(), y.data<float>(), mean.data<float>(),
          rstd.data<float>(), rows, cols, 1e-5f, nullptr);
      if (fast) {
        recorded.record_all(mean.to_vector());
        recorded.record_all(rstd.to_vector());
        recorded.record_all(y.to_vector());
      }
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
  gtl::judge::Outputs recorded("LayerNormBackward.StretchMatchesTheCpu");
  for (auto [rows, cols] : layernorm_backward_cases()) {
    const auto [x, dy, w, b] = layernorm_backward_input(rows, cols);
    const auto fwd = gtl::ops::layernorm_forward(x, w, b, 1e-5f);
    const auto expected = gtl::ops::layernorm_backward(dy, x, w, fwd.mean, fwd.rstd);
    const Tensor dyg = dy.to(kGpu), xg = x.to(kGpu), wg = w.to(kGpu), mg = fwd.mean.to(kGpu),
                 rg = fwd.rstd.to(kGpu);
    Tensor dx = nan_on_gpu({rows, cols}), dw = nan_on_gpu({cols}), db = nan_on_gpu({cols});
    lab02::layernorm_backward(dyg.data<float>(), xg.data<float>(), wg.data<float>(),
                              mg.data<float>(), rg.data<float>(), dx.data<float>(),
                              dw.data<float>(), db.data<float>(), rows, cols, nullptr);
    recorded.record_all(dx.to_vector());
    recorded.record_all(dw.to_vector());
    recorded.record_all(db.to_vector());
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
  gtl::judge::Outputs recorded("BiasGelu.FusedAndUnfusedMatchTheCpu");
  for (auto [rows, cols] : bias_gelu_cases()) {
    const auto [x, bias] = bias_gelu_input(rows, cols);
    const Tensor expected = gtl::ops::gelu(gtl::ops::bias_add(x, bias));
    const Tensor xg = x.to(kGpu), bg = bias.to(kGpu);
    Tensor tmp = nan_on_gpu({rows, cols}), y = nan_on_gpu({rows, cols});
    lab02::bias_gelu_unfused(xg.data<float>(), bg.data<float>(), tmp.data<float>(), y.data<float>(),
                             rows, cols, nullptr);
    expect_close(y, expected, {1e-5, 1e-5}, "unfused bias + GELU (provided)");
    Tensor yf = nan_on_gpu({rows, cols});
    lab02::bias_gelu_fused(xg.data<float>(), bg.data<float>(), yf.data<float>(), rows, cols,
                           nullptr);
    recorded.record_all(yf.to_vector());
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
