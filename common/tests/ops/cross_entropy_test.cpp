// Cross-entropy (mean over rows) and accuracy on the CPU: against double-precision references
// for odd shapes, int32 and int64 labels, every floating dtype, and logits of magnitude 1e4;
// the fused backward against the analytic (softmax - onehot) / rows and against central finite
// differences of the double loss.
//
// Tolerances (atol, rtol): the loss is float32 for every logits dtype and the reference reads
// the same rounded logits, so (1e-5, 1e-5) everywhere. dlogits has the logits' dtype: float32
// (1e-8, 1e-5), float16 (1e-6, 1e-3) (tiny gradients are float16 subnormals, spacing 6e-8),
// bfloat16 (1e-6, 8e-3). Finite differences (h = 1e-6 in double): (1e-6, 1e-4).
#include <algorithm>
#include <cmath>
#include <limits>

#include "gtl/ops/cross_entropy.h"
#include "ops_reference.h"

namespace gtl::ops {
namespace {

using testing::expect_error_naming;
using testing::expect_values;
using testing::random_tensor;
using testing::Tolerance;
using testing::values;

Tolerance grad_tol(DType dt) {
  switch (dt) {
    case DType::Float16:
      return {1e-6, 1e-3};
    case DType::BFloat16:
      return {1e-6, 8e-3};
    default:
      return {1e-8, 1e-5};
  }
}

// Labels in [0, cols) as a tensor of `dtype`, and as integers.
std::pair<Tensor, std::vector<int64_t>> random_labels(int64_t rows, int64_t cols, uint64_t seed,
                                                      DType dtype) {
  const std::vector<float> u = random_tensor({rows}, seed, 0.f, 1.f).to_vector();
  std::vector<float> f(rows);
  std::vector<int64_t> ints(rows);
  for (int64_t r = 0; r < rows; ++r) {
    ints[r] = std::min<int64_t>(cols - 1, static_cast<int64_t>(u[r] * cols));
    f[r] = static_cast<float>(ints[r]);
  }
  return {Tensor::from_vector(f, {rows}, dtype), ints};
}

// Per-row losses, in double, with the max subtracted.
std::vector<double> losses_ref(const std::vector<double>& x, const std::vector<int64_t>& labels,
                               int64_t rows, int64_t cols) {
  std::vector<double> out(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * cols];
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c]);
    for (int64_t c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    out[r] = std::log(s) + m - xr[labels[r]];
  }
  return out;
}

double mean_of(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s / static_cast<double>(v.size());
}

std::vector<double> grad_ref(const std::vector<double>& x, const std::vector<int64_t>& labels,
                             int64_t rows, int64_t cols) {
  std::vector<double> g(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * cols];
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, xr[c]);
    for (int64_t c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    for (int64_t c = 0; c < cols; ++c)
      g[r * cols + c] = (std::exp(xr[c] - m) / s - (c == labels[r] ? 1 : 0)) / rows;
  }
  return g;
}

const DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
const int64_t kShapes[][2] = {{1, 1}, {3, 17}, {1000, 3}, {33, 1000}, {5, 10000}};

TEST(CrossEntropy, LossAndGradientMatchDoubleReference) {
  for (DType dt : kDtypes) {
    for (DType label_dt : {DType::Int32, DType::Int64}) {
      for (const auto& s : kShapes) {
        const int64_t rows = s[0], cols = s[1];
        const Tensor logits = random_tensor({rows, cols}, 41, -6.f, 6.f, dt);
        const auto [labels, ints] = random_labels(rows, cols, 42, label_dt);
        const auto vx = values(logits);
        const std::string ctx = std::string(testing::name(dt)) + " logits, " +
                                testing::name(label_dt) + " labels, [" + std::to_string(rows) +
                                ", " + std::to_string(cols) + "]";
        const Tensor loss = cross_entropy(logits, labels);
        ASSERT_EQ(loss.shape(), Shape{1});
        ASSERT_EQ(loss.dtype(), DType::Float32) << "the loss is float32 for every logits dtype";
        expect_values(loss, {mean_of(losses_ref(vx, ints, rows, cols))}, {1e-5, 1e-5},
                      "cross_entropy " + ctx);
        const Tensor dlogits = cross_entropy_backward(logits, labels);
        EXPECT_EQ(dlogits.dtype(), dt) << "dlogits has the logits' dtype";
        expect_values(dlogits, grad_ref(vx, ints, rows, cols), grad_tol(dt),
                      "cross_entropy_backward " + ctx);
      }
    }
  }
}

TEST(CrossEntropy, LargeLogitsGiveAFiniteExactLoss) {
  // Logits of 1e4: exp(1e4) overflows, so log(sum(exp(x))) computed naively is inf and the loss
  // inf or NaN. With the max subtracted it is exact.
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    const Tensor logits = random_tensor({9, 40}, 43, -1e4f, 1e4f, dt);
    const auto [labels, ints] = random_labels(9, 40, 44, DType::Int64);
    const auto vx = values(logits);
    expect_values(cross_entropy(logits, labels), {mean_of(losses_ref(vx, ints, 9, 40))},
                  {1e-5, 1e-5},
                  std::string("cross_entropy with logits ~1e4, ") + testing::name(dt));
    expect_values(cross_entropy_backward(logits, labels), grad_ref(vx, ints, 9, 40), grad_tol(dt),
                  std::string("cross_entropy_backward with logits ~1e4, ") + testing::name(dt));
  }
}

TEST(CrossEntropy, BackwardMatchesFiniteDifferences) {
  const int64_t rows = 4, cols = 6;
  const Tensor logits = random_tensor({rows, cols}, 45, -3.f, 3.f);
  const auto [labels, ints] = random_labels(rows, cols, 46, DType::Int32);
  const auto loss = [&, &ints = ints](const std::vector<double>& v) {
    return mean_of(losses_ref(v, ints, rows, cols));
  };
  expect_values(cross_entropy_backward(logits, labels),
                testing::numeric_gradient(loss, values(logits)), {1e-6, 1e-4},
                "cross_entropy_backward against finite differences of the mean loss");
}

TEST(CrossEntropy, BackwardScalesByDloss) {
  // Loss scaling (mixed precision) multiplies the upstream gradient: dlogits scale with it.
  const Tensor logits = random_tensor({5, 7}, 47, -2.f, 2.f);
  const auto [labels, ints] = random_labels(5, 7, 48, DType::Int64);
  std::vector<double> expect = grad_ref(values(logits), ints, 5, 7);
  for (double& e : expect) e *= 1024.0;
  expect_values(cross_entropy_backward(logits, labels, 1024.f), expect, {1e-6, 1e-5},
                "cross_entropy_backward with dloss = 1024");
}

TEST(CrossEntropy, AccuracyCountsArgmaxHits) {
  // Row 1 ties at indices 1 and 2: the argmax is the first one, as torch.argmax.
  const Tensor logits =
      Tensor::from_vector({5, 1, 2, /**/ 1, 3, 3, /**/ 0, 0, 9, /**/ -1, -2, -3}, {4, 3});
  expect_values(accuracy(logits, Tensor::from_vector({0, 1, 2, 1}, {4}, DType::Int32)), {0.75},
                {0, 0}, "accuracy: rows 0-2 right, row 3 wrong");
  expect_values(accuracy(logits, Tensor::from_vector({0, 2, 2, 0}, {4}, DType::Int64)), {0.75},
                {0, 0}, "accuracy: a tie goes to the first index, so label 2 in row 1 is wrong");
  // Random logits against a reference argmax, float16 included.
  for (DType dt : kDtypes) {
    const Tensor x = random_tensor({1000, 17}, 49, -1.f, 1.f, dt);
    const auto [labels, ints] = random_labels(1000, 17, 50, DType::Int32);
    const auto v = values(x);
    double hits = 0;
    for (int64_t r = 0; r < 1000; ++r) {
      int64_t best = 0;
      for (int64_t c = 1; c < 17; ++c)
        if (v[r * 17 + c] > v[r * 17 + best]) best = c;
      hits += best == ints[r];
    }
    expect_values(accuracy(x, labels), {hits / 1000}, {1e-7, 0},
                  std::string("accuracy ") + testing::name(dt));
  }
}

TEST(CrossEntropy, NaNLogitsGiveANaNLoss) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor logits = Tensor::from_vector({0.f, nan, 1.f, 0.f}, {2, 2});
  const Tensor labels = Tensor::from_vector({0, 1}, {2}, DType::Int32);
  EXPECT_TRUE(std::isnan(cross_entropy(logits, labels).item())) << "NaN logits must give NaN loss";
  EXPECT_FALSE(
      testing::compare(cross_entropy(logits, labels).to_vector(), {1.f}, {1e30, 1e30}).empty())
      << "a NaN loss must fail the comparison";
}

TEST(CrossEntropy, BadArgumentsAreNamed) {
  const Tensor logits = Tensor::zeros({4, 5});
  expect_error_naming([&] { cross_entropy(logits, Tensor::zeros({3}, DType::Int64)); },
                      {"cross_entropy", "[4, 5]", "[4]", "[3]"}, "labels of the wrong shape");
  expect_error_naming([&] { cross_entropy(logits, Tensor::zeros({4})); },
                      {"cross_entropy", "int32 or int64", "float32"}, "float labels");
  expect_error_naming(
      [&] {
        cross_entropy_backward(logits, Tensor::from_vector({0, 1, 5, 2}, {4}, DType::Int32));
      },
      {"cross_entropy_backward", "label 5", "row 2", "[0, 5)"}, "a label out of range");
  expect_error_naming(
      [&] {
        accuracy(logits, Tensor::from_vector({0, -1, 0, 0}, {4}, DType::Int64));
      },
      {"accuracy", "label -1", "row 1"}, "a negative label");
}

}  // namespace
}  // namespace gtl::ops
