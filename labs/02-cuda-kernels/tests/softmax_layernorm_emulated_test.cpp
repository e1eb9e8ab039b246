// Lab 02, TODOs 4, 5 and 5b on the CPU emulator: your softmax.cu and layernorm.cu built with the
// reference block reduction (tests/reference/block_reduce.cuh, the core's) in place of your
// block_reduce.cuh, so that these checks say whether the row kernels are right whatever the state
// of TODO 1b (kernels_emulated_test.cpp tests 1b itself). The emulator and the comparisons are
// those of kernels_emulated_test.cpp: references in double precision (tests/kernel_cases.h, which
// the lab's judge shares), outputs that start as NaN, every comparison failing on NaN, and three
// thread orders in turn (GTL_EMULATOR_SCHEDULE=forward|reverse|warps fixes one). Each test records
// what your kernels computed for the judge (gtl_judge_output.h).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "emulated_mismatch.h"
#include "gtl_judge_output.h"
#include "kernel_cases.h"
#include "kernels.h"

namespace {

using namespace lab02_cases;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

TEST(EmulatedSoftmax, BothVersionsOnOddRowsLongRowsLargeAndMaskedLogits) {
  gtl::judge::Outputs recorded("EmulatedSoftmax.BothVersionsOnOddRowsLongRowsLargeAndMaskedLogits");
  for (auto [rows, cols, scale] : softmax_cases()) {
    // Masked logits (-inf), as attention uses them: they get probability 0, and must not turn
    // the rest of the row into NaN. The first element of a row is the hardest case.
    const std::vector<float> x = softmax_input(rows, cols, scale);
    const std::vector<double> expected = softmax_reference(x, rows, cols);
    for (bool online : {false, true}) {
      std::vector<float> y(x.size(), kNaN);
      (online ? lab02::softmax : lab02::softmax_naive)(x.data(), y.data(), rows, cols, nullptr);
      if (online) recorded.record_all(y);
      const std::string bad = first_mismatch(expected, y.data(), 1e-4, 1e-7);
      expect_no_mismatch(
          bad, ::testing::Message()
                   << (online ? "TODO 4 online softmax" : "naive softmax") << ", " << rows << "x"
                   << cols << ", logits up to " << scale << " with some -inf: inf "
                   << "or NaN means an exponent that overflowed or a masked logit that became "
                   << "NaN (revisit: the stable softmax, IEEE arithmetic on -inf); finite but "
                   << "wrong means elements counted twice or missed, or partial statistics "
                   << "merged wrongly (revisit: the online softmax, handout)");
    }
  }
}

TEST(EmulatedLayerNorm, BothVersionsWithSavedStatistics) {
  gtl::judge::Outputs recorded("EmulatedLayerNorm.BothVersionsWithSavedStatistics");
  for (auto [rows, cols, offset] : layernorm_cases()) {
    const LayerNormInput in = layernorm_input(rows, cols, offset);
    const LayerNormReference want = layernorm_reference(in, rows, cols);
    for (bool fast : {false, true}) {
      std::vector<float> y(in.x.size(), kNaN), mean(rows, kNaN), rstd(rows, kNaN);
      (fast ? lab02::layernorm : lab02::layernorm_naive)(in.x.data(), in.w.data(), in.b.data(),
                                                         y.data(), mean.data(), rstd.data(), rows,
                                                         cols, kLayerNormEps, nullptr);
      if (fast) recorded.record_all(mean), recorded.record_all(rstd), recorded.record_all(y);
      const std::string what = std::string(fast ? "TODO 5 layernorm" : "naive layernorm") + ", " +
                               std::to_string(rows) + "x" + std::to_string(cols) +
                               ", mean offset " + std::to_string(offset);
      const double tol = layernorm_tolerance(offset);
      expect_no_mismatch(first_mismatch(want.mean, mean.data(), 1e-5, 1e-6),
                         ::testing::Message() << what << ": mean");
      expect_no_mismatch(
          first_mismatch(want.rstd, rstd.data(), tol, 1e-6),
          ::testing::Message()
              << what << ": rstd (if wrong only at a large mean offset: a variance that cancels "
              << "catastrophically in float32; revisit hint 5 of the handout)");
      expect_no_mismatch(first_mismatch(want.y, y.data(), tol, tol), ::testing::Message()
                                                                         << what << ": output");
    }
  }
}

TEST(EmulatedLayerNormBackward, StretchStep) {
  gtl::judge::Outputs recorded("EmulatedLayerNormBackward.StretchStep");
  for (auto [rows, cols] : layernorm_backward_cases()) {
    const LayerNormBackwardCase k = layernorm_backward_case(rows, cols);
    std::vector<float> got_dx(k.x.size(), kNaN), got_dw(cols, kNaN), got_db(cols, kNaN);
    lab02::layernorm_backward(k.dy.data(), k.x.data(), k.w.data(), k.mean.data(), k.rstd.data(),
                              got_dx.data(), got_dw.data(), got_db.data(), rows, cols, nullptr);
    recorded.record_all(got_dx), recorded.record_all(got_dw), recorded.record_all(got_db);
    const std::string what =
        "TODO 5b layernorm backward, " + std::to_string(rows) + "x" + std::to_string(cols);
    expect_no_mismatch(first_mismatch(k.dx, got_dx.data(), 1e-3, 1e-4),
                       ::testing::Message()
                           << what
                           << ": dx (two row sums: the means of dxhat and of dxhat * xhat)");
    expect_no_mismatch(
        first_mismatch(k.dw, got_dw.data(), 1e-4, 1e-5 * std::sqrt(double(rows)) + 1e-5),
        ::testing::Message() << what << ": dweight = sum over rows of dy * xhat");
    expect_no_mismatch(
        first_mismatch(k.db, got_db.data(), 1e-4, 1e-5 * std::sqrt(double(rows)) + 1e-5),
        ::testing::Message() << what << ": dbias = sum over rows of dy");
  }
}

}  // namespace
