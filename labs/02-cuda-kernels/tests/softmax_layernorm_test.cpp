// Lab 02, TODOs 4, 5 and 5b on a GPU: your softmax.cu and layernorm.cu built with the reference
// block reduction (tests/reference/block_reduce.cuh, the core's) in place of your
// block_reduce.cuh, so that these checks say whether the row kernels are right whatever the state
// of TODO 1b (kernels_test.cpp tests 1b itself). Both versions of each kernel, naive baselines
// included, against the core's CPU reference (common/gtl/ops) on odd rows, rows of 100 000
// elements, large and masked logits and large means. Outputs start as NaN, so an element a kernel
// never writes fails. Each test skips, with the reason, without a GPU; the inputs are shared with
// the lab's judge (kernel_gpu_cases.h), and each test records what your kernels computed for it
// (gtl_judge_output.h).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "gtl/ops/layernorm.h"
#include "gtl/ops/softmax.h"
#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "kernel_gpu_cases.h"

#ifdef GTL_WITH_CUDA
#include "kernels.h"
#endif

namespace {

#ifdef GTL_WITH_CUDA

using gtl::Device;
using gtl::DType;
using gtl::Tensor;
using gtl::testing::expect_close;
using namespace lab02_gpu_cases;

const Device kGpu = Device::cuda(0);

Tensor nan_on_gpu(const gtl::Shape& shape) {
  return Tensor::full(shape, std::nan(""), DType::Float32, kGpu);
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
                       " with some -inf (inf or NaN: an exponent that overflowed, or a masked "
                       "logit that became NaN; revisit the stable softmax and IEEE arithmetic "
                       "on -inf)");
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
      // a variance that cancels (two numbers near 1e8 subtracted) is off by O(1). The output
      // tolerance follows the offset.
      const double out_atol = offset > 0 ? 5e-3 : 1e-4;
      expect_close(mean, expected.mean, {1e-5, 1e-5}, what + ": saved mean");
      expect_close(rstd, expected.rstd, {1e-5, 1e-3},
                   what +
                       ": saved rstd (if wrong only at a large mean offset: a variance that "
                       "cancels catastrophically in float32; revisit hint 5 of the handout)");
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

#else

TEST(SoftmaxLayerNorm, NeedTheCudaBackend) {
  GTEST_SKIP() << "needs a CUDA GPU: " << gtl::cuda_unavailable_reason();
}

#endif  // GTL_WITH_CUDA

}  // namespace
