// Lab 02 correctness checks: every kernel, naive baselines included, against the core's CPU
// reference (common/gtl/ops) on odd and edge sizes: n = 1, sizes that are not multiples of the
// block or tile, very long rows and large magnitudes. Outputs start as NaN, so an element a kernel
// never writes fails the comparison. Each test skips, with the reason, without a GPU. The inputs
// are shared with the lab's judge (kernel_gpu_cases.h), and each test records what your kernels
// computed for it (gtl_judge_output.h).
//
// TODO 1c's kernel is tested in reduce_final_test.cpp, and those of TODOs 4, 5 and 5b in
// softmax_layernorm_test.cpp, built with the reference block reduction, so that they pass as soon
// as their TODO is right, whatever the state of 1b.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "gtl/ops/activations.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/matmul.h"
#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "kernel_gpu_cases.h"

#ifdef GTL_WITH_CUDA
#include "kernel_cases.h"
#include "kernels.h"
#include "reduce_gpu_check.h"

namespace lab02_tests {
void block_max_then_sum(const float* x, float* out, int n, int threads);  // block_reduce_twice.cu
}
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

// TODO 1b's block_reduce twice in a row (a max, then a sum, through the same scratch), as the
// softmax and layernorm kernels call it: every thread must get both results. Their own checks use
// a reference block reduction, so this is where a barrier missing in yours shows.
TEST(Reduce, BlockReduceTwiceInARow) {
  GTL_REQUIRE_GPU();
  gtl::judge::Outputs recorded("Reduce.BlockReduceTwiceInARow");
  for (auto [threads, n] : lab02_cases::block_twice_cases()) {
    const std::vector<float> x = lab02_cases::block_twice_input(n);
    const float want_max = *std::max_element(x.begin(), x.end());
    const auto [want_sum, magnitude] = lab02_cases::reduce_reference(x.data(), n);
    const Tensor xg = Tensor::from_vector(x, {n}).to(kGpu);
    Tensor out = nan_on_gpu({2 * threads});
    lab02_tests::block_max_then_sum(xg.data<float>(), out.data<float>(), n, threads);
    const std::vector<float> got = out.to_vector();
    recorded.record_all(got);
    for (int t = 0; t < threads; ++t) {
      if (got[2 * t] != want_max ||
          !lab02_cases::reduce_close(got[2 * t + 1], want_sum, magnitude)) {
        ADD_FAILURE()
            << "TODO 1b block_reduce called twice in a row (a max, then a sum), " << threads
            << " threads, " << n << " values: thread " << t << " got max " << got[2 * t]
            << " and sum " << got[2 * t + 1] << ", expected " << want_max << " and " << want_sum
            << " (a warp that ran ahead into the second call overwrote scratch before the "
               "others had read it in the first: revisit what orders one call's reads of "
               "scratch before the next call's writes; or not every thread gets the result)";
        break;
      }
    }
  }
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
             "missing edge, or a race on a shared tile";
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
