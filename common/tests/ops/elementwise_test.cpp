// Element-wise ops on the CPU against double-precision loops, for odd sizes and every floating
// dtype; in-place variants; argument errors that name both tensors.
//
// Tolerances: one rounding of the output to its dtype (relative 2^-24 float32, 2^-11 float16,
// 2^-8 bfloat16), with margin: rtol 1e-6 / 1e-3 / 8e-3, and a small atol for results near 0.
#include <cmath>
#include <limits>

#include "gtl/ops/elementwise.h"
#include "ops_reference.h"

namespace gtl::ops {
namespace {

using testing::expect_error_naming;
using testing::expect_values;
using testing::random_tensor;
using testing::Tolerance;
using testing::values;

Tolerance tol_for(DType dtype) {
  switch (dtype) {
    case DType::Float16:
      return {1e-4, 1e-3};
    case DType::BFloat16:
      return {1e-3, 8e-3};
    default:
      return {1e-6, 1e-6};
  }
}

const DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
const int64_t kSizes[] = {1, 3, 17, 1000, 10000};

TEST(Elementwise, AddMulScaleMatchDoubleReference) {
  for (DType dt : kDtypes) {
    for (int64_t n : kSizes) {
      const Tensor a = random_tensor({n}, 1, -4.f, 4.f, dt);
      const Tensor b = random_tensor({n}, 2, -4.f, 4.f, dt);
      const auto va = values(a), vb = values(b);
      std::vector<double> sum(n), prod(n), scaled(n);
      for (int64_t i = 0; i < n; ++i) {
        sum[i] = va[i] + vb[i];
        prod[i] = va[i] * vb[i];
        scaled[i] = -0.37 * va[i];
      }
      const std::string ctx = std::string(testing::name(dt)) + " n=" + std::to_string(n);
      EXPECT_EQ(add(a, b).dtype(), dt) << "add keeps the input dtype";
      expect_values(add(a, b), sum, tol_for(dt), "add " + ctx);
      expect_values(mul(a, b), prod, tol_for(dt), "mul " + ctx);
      expect_values(scale(a, -0.37f), scaled, tol_for(dt), "scale " + ctx);
    }
  }
}

TEST(Elementwise, InPlaceOpsWriteIntoTheirFirstArgument) {
  for (DType dt : kDtypes) {
    const Tensor b = random_tensor({3, 17}, 4, -2.f, 2.f, dt);
    const Tensor a = random_tensor({3, 17}, 3, -2.f, 2.f, dt);
    const auto va = values(a), vb = values(b);
    std::vector<double> expect(va.size());

    Tensor x = a.clone();
    add_(x, b);
    for (std::size_t i = 0; i < va.size(); ++i) expect[i] = va[i] + vb[i];
    expect_values(x, expect, tol_for(dt), std::string("add_ ") + testing::name(dt));

    x = a.clone();
    mul_(x, b);
    for (std::size_t i = 0; i < va.size(); ++i) expect[i] = va[i] * vb[i];
    expect_values(x, expect, tol_for(dt), std::string("mul_ ") + testing::name(dt));

    x = a.clone();
    scale_(x, 2.5f);
    for (std::size_t i = 0; i < va.size(); ++i) expect[i] = 2.5 * va[i];
    expect_values(x, expect, tol_for(dt), std::string("scale_ ") + testing::name(dt));
  }
}

TEST(Elementwise, AxpyAccumulatesAlphaTimesX) {
  for (DType dt : kDtypes) {
    for (int64_t n : kSizes) {
      const Tensor x = random_tensor({n}, 5, -1.f, 1.f, dt);
      Tensor y = random_tensor({n}, 6, -1.f, 1.f, dt);
      const auto vx = values(x), vy = values(y);
      axpy_(-0.125f, x, y);
      std::vector<double> expect(n);
      for (int64_t i = 0; i < n; ++i) expect[i] = vy[i] - 0.125 * vx[i];
      expect_values(
          y, expect, tol_for(dt),
          std::string("axpy_ (y += alpha x) ") + testing::name(dt) + " n=" + std::to_string(n));
    }
  }
}

TEST(Elementwise, BiasAddBroadcastsOverRows) {
  const int64_t shapes[][2] = {{1, 1}, {3, 17}, {33, 5}, {2, 1000}};
  for (DType dt : kDtypes) {
    for (DType bias_dt : kDtypes) {
      for (const auto& s : shapes) {
        const int64_t rows = s[0], cols = s[1];
        const Tensor x = random_tensor({rows, cols}, 7, -3.f, 3.f, dt);
        const Tensor bias = random_tensor({cols}, 8, -3.f, 3.f, bias_dt);
        const auto vx = values(x), vb = values(bias);
        std::vector<double> expect(vx.size());
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) expect[r * cols + c] = vx[r * cols + c] + vb[c];
        const std::string ctx = std::string(testing::name(dt)) + " x, " + testing::name(bias_dt) +
                                " bias, [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                "]";
        const Tensor out = bias_add(x, bias);
        EXPECT_EQ(out.dtype(), dt) << "bias_add keeps x's dtype";
        expect_values(out, expect, tol_for(dt), "bias_add " + ctx);
        Tensor inplace = x.clone();
        bias_add_(inplace, bias);
        expect_values(inplace, expect, tol_for(dt), "bias_add_ " + ctx);
      }
    }
  }
}

TEST(Elementwise, NaNPropagatesAndFailsTheCheck) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = Tensor::from_vector({1.f, nan, 3.f}, {3});
  const Tensor b = Tensor::from_vector({1.f, 1.f, 1.f}, {3});
  const std::vector<float> out = add(a, b).to_vector();
  EXPECT_TRUE(std::isnan(out[1])) << "add: NaN + 1 must stay NaN, got " << out[1];
  // A NaN result compared with a finite expected value must be reported, never pass.
  EXPECT_FALSE(testing::compare(out, {2.f, 2.f, 4.f}, {1e30, 1e30}).empty())
      << "compare() must fail on NaN even with a huge tolerance";
}

TEST(Elementwise, MismatchedArgumentsNameBoth) {
  const Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2});
  expect_error_naming([&] { add(a, b); }, {"add", "[2, 3]", "[3, 2]"}, "add with different shapes");
  expect_error_naming([&] { axpy_(1.f, a, b); }, {"axpy_", "[2, 3]", "[3, 2]"},
                      "axpy_ with different shapes");
  const Tensor h = Tensor::zeros({2, 3}, DType::Float16);
  expect_error_naming([&] { mul(a, h); }, {"mul", "float32", "float16"},
                      "mul with different dtypes");
  expect_error_naming([&] { bias_add(a, Tensor::zeros({2})); }, {"bias_add", "[3]", "[2]"},
                      "bias_add with a bias of the wrong length");
  expect_error_naming(
      [&] { add(Tensor::zeros({2}, DType::Int32), Tensor::zeros({2}, DType::Int32)); },
      {"add", "int32"}, "add of integer tensors");
}

}  // namespace
}  // namespace gtl::ops
