// ReLU and GELU (tanh approximation) on the CPU: forward and backward against double-precision
// formulas on odd sizes and every floating dtype, and backward against central finite
// differences of the double-precision forward.
//
// Tolerances: float32 rtol 1e-5 / atol 1e-6 (float tanhf against double tanh); float16 rtol 1e-3
// / atol 1e-4 and bfloat16 rtol 8e-3 / atol 1e-3 (one rounding of the output). Finite
// differences (h = 1e-6 in double) against the float32 backward: rtol 1e-4, atol 1e-5.
#include <cmath>
#include <limits>
#include <numbers>

#include "gtl/ops/activations.h"
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
      return {1e-6, 1e-5};
  }
}

const double kK = std::sqrt(2.0 / std::numbers::pi);

double gelu_ref(double x) {
  return 0.5 * x * (1.0 + std::tanh(kK * (x + 0.044715 * x * x * x)));
}

double gelu_grad_ref(double x) {
  const double t = std::tanh(kK * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * kK * (1 + 3 * 0.044715 * x * x);
}

const DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
const int64_t kSizes[] = {1, 3, 17, 1000, 10000};

TEST(Activations, ForwardMatchesDoubleReference) {
  for (DType dt : kDtypes) {
    for (int64_t n : kSizes) {
      const Tensor x = random_tensor({n}, 11, -6.f, 6.f, dt);
      const auto vx = values(x);
      std::vector<double> r(n), g(n);
      for (int64_t i = 0; i < n; ++i) {
        r[i] = vx[i] > 0 ? vx[i] : 0;
        g[i] = gelu_ref(vx[i]);
      }
      const std::string ctx = std::string(testing::name(dt)) + " n=" + std::to_string(n);
      expect_values(relu(x), r, tol_for(dt), "relu " + ctx);
      expect_values(gelu(x), g, tol_for(dt), "gelu (tanh approximation) " + ctx);
      EXPECT_EQ(gelu(x).dtype(), dt) << "gelu keeps the input dtype";
    }
  }
}

TEST(Activations, BackwardMatchesAnalyticDerivative) {
  for (DType dt : kDtypes) {
    for (int64_t n : kSizes) {
      const Tensor x = random_tensor({n}, 12, -6.f, 6.f, dt);
      const Tensor dout = random_tensor({n}, 13, -2.f, 2.f, dt);
      const auto vx = values(x), vg = values(dout);
      std::vector<double> r(n), g(n);
      for (int64_t i = 0; i < n; ++i) {
        r[i] = vx[i] > 0 ? vg[i] : 0;
        g[i] = vg[i] * gelu_grad_ref(vx[i]);
      }
      const std::string ctx = std::string(testing::name(dt)) + " n=" + std::to_string(n);
      expect_values(relu_backward(x, dout), r, tol_for(dt), "relu_backward " + ctx);
      expect_values(gelu_backward(x, dout), g, tol_for(dt), "gelu_backward " + ctx);
    }
  }
}

TEST(Activations, BackwardMatchesFiniteDifferences) {
  // x kept away from ReLU's kink at 0, where the derivative does not exist.
  const Tensor x =
      Tensor::from_vector({-3.1f, -1.2f, -0.4f, -0.05f, 0.07f, 0.5f, 1.3f, 2.9f, 4.2f}, {9});
  const Tensor dout = random_tensor({9}, 14, -1.f, 1.f);
  const auto vx = values(x), vg = values(dout);
  const Tolerance fd_tol{1e-5, 1e-4};
  const auto loss = [&](double (*f)(double)) {
    return [&, f](const std::vector<double>& v) {
      std::vector<double> y(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) y[i] = f(v[i]);
      return testing::dot(vg, y);
    };
  };
  expect_values(gelu_backward(x, dout), testing::numeric_gradient(loss(gelu_ref), vx), fd_tol,
                "gelu_backward against finite differences of gelu");
  expect_values(relu_backward(x, dout),
                testing::numeric_gradient(loss([](double v) { return v > 0 ? v : 0.0; }), vx),
                fd_tol, "relu_backward against finite differences of relu");
}

TEST(Activations, NaNPropagates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector({nan, 1.f}, {2});
  EXPECT_TRUE(std::isnan(relu(x).to_vector()[0])) << "relu(NaN) must be NaN, not 0";
  EXPECT_TRUE(std::isnan(gelu(x).to_vector()[0])) << "gelu(NaN) must be NaN";
  EXPECT_FALSE(testing::compare(gelu(x).to_vector(), {0.f, 0.841192f}, {1e30, 1e30}).empty())
      << "a NaN output must fail the comparison";
}

TEST(Activations, MismatchedArgumentsNameBoth) {
  const Tensor x = Tensor::zeros({4, 5}), dout = Tensor::zeros({5, 4});
  expect_error_naming([&] { gelu_backward(x, dout); }, {"gelu_backward", "[4, 5]", "[5, 4]"},
                      "gelu_backward with a dout of another shape");
  expect_error_naming(
      [&] {
        relu_backward(x, Tensor::zeros({4, 5}, DType::BFloat16));
      },
      {"relu_backward", "float32", "bfloat16"}, "relu_backward with a dout of another dtype");
}

}  // namespace
}  // namespace gtl::ops
