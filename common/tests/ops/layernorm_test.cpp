// LayerNorm on the CPU: forward (out, mean, rstd) and backward (dx, dweight, dbias) against
// double-precision references on odd shapes and every dtype combination (x float32 / float16 /
// bfloat16, weight float32, float16 or bfloat16 whatever x's), inputs with a large offset (where a
// one-pass variance fails), and the backward against central finite differences of the double
// forward.
//
// Tolerances (atol, rtol): out and dx in x's dtype: float32 (1e-5, 1e-4), float16 (2e-3, 2e-3),
// bfloat16 (2e-2, 1.6e-2): float32 math, one rounding of the output, and dx's cancellation
// (dxhat - mean(dxhat) - xhat mean(dxhat xhat)). mean and rstd (float32, from the same rounded
// inputs): (1e-6, 1e-5). dweight and dbias sum over rows: atol 1e-6 * rows. Finite differences
// (h = 1e-6 in double) against the float32 backward: (1e-5, 1e-4).
#include <cmath>

#include "gtl/ops/layernorm.h"
#include "ops_reference.h"

namespace gtl::ops {
namespace {

using testing::expect_error_naming;
using testing::expect_values;
using testing::random_tensor;
using testing::Tolerance;
using testing::values;

constexpr double kEps = 1e-5;

Tolerance out_tol(DType dt) {
  switch (dt) {
    case DType::Float16:
      return {2e-3, 2e-3};
    case DType::BFloat16:
      return {2e-2, 1.6e-2};
    default:
      return {1e-5, 1e-4};
  }
}

struct Ref {
  std::vector<double> out, mean, rstd;
};

Ref forward_ref(const std::vector<double>& x, const std::vector<double>& w,
                const std::vector<double>& b, int64_t rows, int64_t cols) {
  Ref f{std::vector<double>(x.size()), std::vector<double>(rows), std::vector<double>(rows)};
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * cols];
    double m = 0, v = 0;
    for (int64_t c = 0; c < cols; ++c) m += xr[c];
    m /= cols;
    for (int64_t c = 0; c < cols; ++c) v += (xr[c] - m) * (xr[c] - m);
    const double rs = 1 / std::sqrt(v / cols + kEps);
    for (int64_t c = 0; c < cols; ++c) f.out[r * cols + c] = (xr[c] - m) * rs * w[c] + b[c];
    f.mean[r] = m;
    f.rstd[r] = rs;
  }
  return f;
}

struct RefGrads {
  std::vector<double> dx, dw, db;
};

RefGrads backward_ref(const std::vector<double>& g, const std::vector<double>& x,
                      const std::vector<double>& w, int64_t rows, int64_t cols) {
  const Ref f = forward_ref(x, w, std::vector<double>(cols, 0.0), rows, cols);
  RefGrads d{std::vector<double>(x.size()), std::vector<double>(cols, 0.0),
             std::vector<double>(cols, 0.0)};
  for (int64_t r = 0; r < rows; ++r) {
    double a = 0, bsum = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      const double xhat = (x[i] - f.mean[r]) * f.rstd[r];
      a += g[i] * w[c];
      bsum += g[i] * w[c] * xhat;
      d.dw[c] += g[i] * xhat;
      d.db[c] += g[i];
    }
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t i = r * cols + c;
      const double xhat = (x[i] - f.mean[r]) * f.rstd[r];
      d.dx[i] = f.rstd[r] * (g[i] * w[c] - a / cols - xhat * bsum / cols);
    }
  }
  return d;
}

const DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
const int64_t kShapes[][2] = {{1, 1}, {3, 17}, {1000, 3}, {33, 1000}, {5, 10000}};

TEST(LayerNorm, ForwardAndBackwardMatchDoubleReference) {
  for (DType dt : kDtypes) {
    for (DType wdt : kDtypes) {
      for (const auto& s : kShapes) {
        const int64_t rows = s[0], cols = s[1];
        const Tensor x = random_tensor({rows, cols}, 51, -3.f, 5.f, dt);
        const Tensor w = random_tensor({cols}, 52, 0.5f, 1.5f, wdt);
        const Tensor b = random_tensor({cols}, 53, -1.f, 1.f, wdt);
        const Tensor dout = random_tensor({rows, cols}, 54, -1.f, 1.f, dt);
        const auto vx = values(x), vw = values(w), vb = values(b), vg = values(dout);
        const std::string ctx = std::string(testing::name(dt)) + " x, " + testing::name(wdt) +
                                " weight, [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "]";
        const Ref ref = forward_ref(vx, vw, vb, rows, cols);
        const LayerNormForward f = layernorm_forward(x, w, b);
        ASSERT_EQ(f.out.dtype(), dt);
        ASSERT_EQ(f.mean.shape(), Shape{rows});
        expect_values(f.out, ref.out, out_tol(dt), "layernorm_forward out " + ctx);
        expect_values(f.mean, ref.mean, {1e-6, 1e-5}, "layernorm_forward mean " + ctx);
        expect_values(f.rstd, ref.rstd, {1e-6, 1e-5}, "layernorm_forward rstd " + ctx);

        const RefGrads rg = backward_ref(vg, vx, vw, rows, cols);
        const LayerNormBackward g = layernorm_backward(dout, x, w, f.mean, f.rstd);
        ASSERT_EQ(g.dx.dtype(), dt);
        ASSERT_EQ(g.dweight.dtype(), DType::Float32);
        expect_values(g.dx, rg.dx, out_tol(dt), "layernorm_backward dx " + ctx);
        const Tolerance sum_tol{1e-6 * rows, 1e-5};
        expect_values(g.dweight, rg.dw, sum_tol, "layernorm_backward dweight " + ctx);
        expect_values(g.dbias, rg.db, sum_tol, "layernorm_backward dbias " + ctx);
      }
    }
  }
}

TEST(LayerNorm, LargeOffsetKeepsTheVariance) {
  // x = 1e4 + noise of std ~0.6: E[x^2] - E[x]^2 would subtract two numbers near 1e8 whose
  // float32 ulp is 8, destroying a variance of ~0.3. Two passes keep it, and x - mean must not
  // use a mean rounded to float (half an ulp of 1e4 is 5e-4).
  const Tensor x = random_tensor({7, 333}, 55, 1e4f - 1.f, 1e4f + 1.f);
  const Tensor w = Tensor::ones({333}), b = Tensor::zeros({333});
  const auto vx = values(x);
  const Ref ref = forward_ref(vx, values(w), values(b), 7, 333);
  const LayerNormForward f = layernorm_forward(x, w, b);
  expect_values(f.rstd, ref.rstd, {1e-6, 1e-5}, "rstd of inputs near 1e4");
  expect_values(f.out, ref.out, out_tol(DType::Float32), "layernorm of inputs near 1e4");
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  const int64_t rows = 3, cols = 5;
  const Tensor x = random_tensor({rows, cols}, 56, -2.f, 2.f);
  const Tensor w = random_tensor({cols}, 57, 0.5f, 1.5f);
  const Tensor b = random_tensor({cols}, 58, -1.f, 1.f);
  const Tensor dout = random_tensor({rows, cols}, 59, -1.f, 1.f);
  const auto vx = values(x), vw = values(w), vb = values(b), vg = values(dout);
  const LayerNormForward f = layernorm_forward(x, w, b);
  const LayerNormBackward g = layernorm_backward(dout, x, w, f.mean, f.rstd);
  const Tolerance fd{1e-5, 1e-4};
  expect_values(g.dx,
                testing::numeric_gradient(
                    [&](const std::vector<double>& v) {
                      return testing::dot(vg, forward_ref(v, vw, vb, rows, cols).out);
                    },
                    vx),
                fd, "layernorm dx against finite differences");
  expect_values(g.dweight,
                testing::numeric_gradient(
                    [&](const std::vector<double>& v) {
                      return testing::dot(vg, forward_ref(vx, v, vb, rows, cols).out);
                    },
                    vw),
                fd, "layernorm dweight against finite differences");
  expect_values(g.dbias,
                testing::numeric_gradient(
                    [&](const std::vector<double>& v) {
                      return testing::dot(vg, forward_ref(vx, vw, v, rows, cols).out);
                    },
                    vb),
                fd, "layernorm dbias against finite differences");
}

TEST(LayerNorm, NaNInARowMakesThatRowNaN) {
  const Tensor x = Tensor::from_vector({1.f, std::nanf(""), 3.f, 1.f, 2.f, 3.f}, {2, 3});
  const std::vector<float> out =
      layernorm_forward(x, Tensor::ones({3}), Tensor::zeros({3})).out.to_vector();
  EXPECT_TRUE(std::isnan(out[0])) << "a NaN in row 0 must make its normalised values NaN";
  EXPECT_FALSE(std::isnan(out[3])) << "row 1 has no NaN";
  EXPECT_FALSE(testing::compare(out, {-1, 0, 1, -1.2247f, 0, 1.2247f}, {1e30, 1e30}).empty())
      << "a NaN output must fail the comparison";
}

TEST(LayerNorm, BadArgumentsAreNamed) {
  const Tensor x = Tensor::zeros({4, 6});
  const Tensor w = Tensor::ones({6}), b = Tensor::zeros({6});
  expect_error_naming([&] { layernorm_forward(x, Tensor::ones({5}), b); },
                      {"layernorm_forward", "weight", "[6]", "[5]"},
                      "a weight of the wrong length");
  expect_error_naming([&] { layernorm_forward(x, w, Tensor::zeros({6}, DType::Float16)); },
                      {"layernorm_forward", "bias", "float16"}, "a bias of another dtype");
  const LayerNormForward f = layernorm_forward(x, w, b);
  expect_error_naming(
      [&] {
        layernorm_backward(Tensor::zeros({6, 4}), x, w, f.mean, f.rstd);
      },
      {"layernorm_backward", "[6, 4]", "[4, 6]"}, "dout of another shape");
  expect_error_naming([&] { layernorm_backward(x, x, w, Tensor::zeros({3}), f.rstd); },
                      {"layernorm_backward", "[4]", "[3]"}, "mean of the wrong length");
}

}  // namespace
}  // namespace gtl::ops
