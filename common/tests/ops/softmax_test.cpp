// Softmax and log-softmax on the CPU: forward against double-precision references on odd shapes
// (one column, rows not a multiple of 32, a 10000-wide row), logits of magnitude 1e4, masked
// (-inf) entries and NaN; backward against the analytic formula and against central finite
// differences of the double forward.
//
// Tolerances (atol, rtol): softmax float32 (1e-8, 1e-5), float16 (1e-4, 1e-3), bfloat16
// (1e-3, 8e-3): float exp, then one rounding of the output. log_softmax float32 (1e-5, 1e-5),
// float16 (2e-3, 1e-3), bfloat16 (2e-2, 8e-3): outputs reach -2e4 for 1e4 logits, so the
// relative term carries them. softmax_backward sums a whole row, so its atol grows with sqrt(C).
// Finite differences (h = 1e-6 in double) against the float32 backward: (1e-6, 1e-4).
#include <algorithm>
#include <cmath>
#include <limits>

#include "gtl/ops/softmax.h"
#include "ops_reference.h"

namespace gtl::ops {
namespace {

using testing::expect_error_naming;
using testing::expect_values;
using testing::random_tensor;
using testing::Tolerance;
using testing::values;

Tolerance softmax_tol(DType dt) {
  switch (dt) {
    case DType::Float16:
      return {1e-4, 1e-3};
    case DType::BFloat16:
      return {1e-3, 8e-3};
    default:
      return {1e-8, 1e-5};
  }
}

Tolerance log_softmax_tol(DType dt) {
  switch (dt) {
    case DType::Float16:
      return {2e-3, 1e-3};
    case DType::BFloat16:
      return {2e-2, 8e-3};
    default:
      return {1e-5, 1e-5};
  }
}

// Row-wise reference in double: subtract the max, as the op does (exp of 1e4 overflows even in
// double).
std::vector<double> softmax_ref(const std::vector<double>& x, int64_t rows, int64_t cols,
                                bool log) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * cols];
    double m = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c]);
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    for (int64_t c = 0; c < cols; ++c)
      y[r * cols + c] = log ? (xr[c] - m) - std::log(s) : std::exp(xr[c] - m) / s;
  }
  return y;
}

const DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
const int64_t kShapes[][2] = {{1, 1}, {3, 17}, {1000, 3}, {33, 1000}, {5, 10000}};

TEST(Softmax, ForwardMatchesDoubleReference) {
  for (DType dt : kDtypes) {
    for (const auto& s : kShapes) {
      const int64_t rows = s[0], cols = s[1];
      const Tensor x = random_tensor({rows, cols}, 31, -8.f, 8.f, dt);
      const auto vx = values(x);
      const std::string ctx = std::string(testing::name(dt)) + " [" + std::to_string(rows) + ", " +
                              std::to_string(cols) + "]";
      const Tensor y = softmax(x);
      EXPECT_EQ(y.dtype(), dt) << "softmax keeps the input dtype";
      expect_values(y, softmax_ref(vx, rows, cols, false), softmax_tol(dt), "softmax " + ctx);
      expect_values(log_softmax(x), softmax_ref(vx, rows, cols, true), log_softmax_tol(dt),
                    "log_softmax " + ctx);
    }
  }
}

TEST(Softmax, LargeLogitsStayFiniteAndCorrect) {
  // exp(1e4) is inf in float32 (and in double): without subtracting the row max every output
  // would be inf/inf = NaN. Two regimes: spread over [-1e4, 1e4] (almost one-hot), and all near
  // 1e4 (a smooth distribution that only the max subtraction makes computable).
  for (DType dt : {DType::Float32, DType::BFloat16, DType::Float16}) {
    for (const auto& range : {std::pair{-1e4f, 1e4f}, std::pair{1e4f, 1e4f + 8.f}}) {
      const Tensor x = random_tensor({7, 333}, 32, range.first, range.second, dt);
      const auto vx = values(x);
      const std::string ctx = std::string(testing::name(dt)) + " logits in [" +
                              std::to_string(range.first) + ", " + std::to_string(range.second) +
                              "]";
      expect_values(softmax(x), softmax_ref(vx, 7, 333, false), softmax_tol(dt), "softmax " + ctx);
      expect_values(log_softmax(x), softmax_ref(vx, 7, 333, true), log_softmax_tol(dt),
                    "log_softmax " + ctx);
    }
  }
}

TEST(Softmax, MaskedEntriesGetZeroProbability) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = Tensor::from_vector({-inf, 1.f, -inf, 2.f, 0.f, -inf}, {2, 3});
  const double e2 = std::exp(2.0);
  expect_values(softmax(x), {0, 1, 0, e2 / (e2 + 1), 1 / (e2 + 1), 0}, softmax_tol(DType::Float32),
                "softmax with -inf (masked) entries");
}

TEST(Softmax, NaNPoisonsOnlyItsRow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> y =
      softmax(Tensor::from_vector({0.f, nan, 1.f, 0.f, 0.f, 0.f}, {2, 3})).to_vector();
  for (int c = 0; c < 3; ++c)
    EXPECT_TRUE(std::isnan(y[c])) << "row 0 holds a NaN: its softmax is NaN";
  expect_values(Tensor::from_vector({y[3], y[4], y[5]}, {3}), {1 / 3., 1 / 3., 1 / 3.},
                softmax_tol(DType::Float32), "row 1 has no NaN and must be unaffected");
  EXPECT_FALSE(testing::compare(y, {1, 1, 1, 1, 1, 1}, {1e30, 1e30}).empty())
      << "a NaN softmax must fail the comparison";
}

TEST(Softmax, BackwardMatchesAnalyticFormula) {
  for (DType dt : kDtypes) {
    for (const auto& s : kShapes) {
      const int64_t rows = s[0], cols = s[1];
      const Tensor x = random_tensor({rows, cols}, 33, -4.f, 4.f, dt);
      const Tensor dy = random_tensor({rows, cols}, 34, -1.f, 1.f, dt);
      const std::string ctx = std::string(testing::name(dt)) + " [" + std::to_string(rows) + ", " +
                              std::to_string(cols) + "]";
      for (bool log : {false, true}) {
        const Tensor y = log ? log_softmax(x) : softmax(x);
        const auto vy = values(y), vg = values(dy);
        std::vector<double> expect(vy.size());
        for (int64_t r = 0; r < rows; ++r) {
          double d = 0;
          for (int64_t c = 0; c < cols; ++c)
            d += log ? vg[r * cols + c] : vg[r * cols + c] * vy[r * cols + c];
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t i = r * cols + c;
            expect[i] = log ? vg[i] - std::exp(vy[i]) * d : vy[i] * (vg[i] - d);
          }
        }
        // The backward of a 10000-wide row sums 10000 terms: absolute error grows with it.
        Tolerance tol = softmax_tol(dt);
        tol.atol =
            std::max(tol.atol, (dt == DType::Float32 ? 1e-7 : 1e-4) * std::sqrt(double(cols)));
        if (log) tol = log_softmax_tol(dt);
        expect_values(log ? log_softmax_backward(y, dy) : softmax_backward(y, dy), expect, tol,
                      std::string(log ? "log_softmax_backward " : "softmax_backward ") + ctx);
      }
    }
  }
}

TEST(Softmax, BackwardMatchesFiniteDifferences) {
  const int64_t rows = 3, cols = 7;
  const Tensor x = random_tensor({rows, cols}, 35, -3.f, 3.f);
  const Tensor w = random_tensor({rows, cols}, 36, -1.f, 1.f);
  const auto vx = values(x), vw = values(w);
  for (bool log : {false, true}) {
    const auto loss = [&](const std::vector<double>& v) {
      return testing::dot(vw, softmax_ref(v, rows, cols, log));
    };
    const Tensor dx =
        log ? log_softmax_backward(log_softmax(x), w) : softmax_backward(softmax(x), w);
    expect_values(dx, testing::numeric_gradient(loss, vx), {1e-6, 1e-4},
                  log ? "log_softmax_backward against finite differences"
                      : "softmax_backward against finite differences");
  }
}

TEST(Softmax, MismatchedArgumentsNameBoth) {
  const Tensor y = Tensor::zeros({2, 3}), dy = Tensor::zeros({2, 4});
  expect_error_naming([&] { softmax_backward(y, dy); }, {"softmax_backward", "[2, 3]", "[2, 4]"},
                      "softmax_backward with dy of another shape");
  expect_error_naming([&] { log_softmax(Tensor::zeros({2}, DType::Int32)); },
                      {"log_softmax", "int32"}, "log_softmax of an int32 tensor");
}

}  // namespace
}  // namespace gtl::ops
