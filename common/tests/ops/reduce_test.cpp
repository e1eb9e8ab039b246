// Reductions on the CPU against double-precision sums: whole-tensor sum, mean and max (float32
// [1] results for every input dtype) and sum_rows (the bias gradient) on odd shapes.
//
// The inputs are read exactly (float16/bfloat16 widen exactly to float), and the CPU
// accumulates in double, so the only error left is the final rounding to float32:
// rtol 1e-6 with atol 1e-6 * sum|x| (a sum that cancels to near 0 is judged against its terms).
#include <algorithm>
#include <cmath>
#include <limits>

#include "gtl/ops/reduce.h"
#include "ops_reference.h"

namespace gtl::ops {
namespace {

using testing::expect_error_naming;
using testing::expect_values;
using testing::random_tensor;
using testing::Tolerance;
using testing::values;

const DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};

TEST(Reduce, SumMeanMaxMatchDoubleReference) {
  for (DType dt : kDtypes) {
    for (int64_t n : {1, 3, 17, 1000, 10000, 100003}) {
      const Tensor x = random_tensor({n}, 21, -1.f, 2.f, dt);
      const auto v = values(x);
      double s = 0, abs_s = 0, m = -INFINITY;
      for (double e : v) {
        s += e;
        abs_s += std::fabs(e);
        m = std::max(m, e);
      }
      const Tolerance tol{1e-6 * abs_s, 1e-6};
      const std::string ctx = std::string(testing::name(dt)) + " n=" + std::to_string(n);
      const Tensor total = sum(x);
      ASSERT_EQ(total.dtype(), DType::Float32) << "sum returns float32 whatever the input dtype";
      ASSERT_EQ(total.shape(), Shape{1}) << "sum returns a one-element tensor";
      expect_values(total, {s}, tol, "sum " + ctx);
      expect_values(mean(x), {s / n}, {1e-6 * abs_s / n, 1e-6}, "mean " + ctx);
      expect_values(max(x), {m}, {0, 0}, "max " + ctx);
    }
  }
}

TEST(Reduce, SumOfManyFloat16ValuesDoesNotOverflow) {
  // 100000 halves of value ~1.5: the sum (~150000) is far above float16's max (65504); a float16
  // accumulator would reach inf. The result is float32.
  const Tensor x = Tensor::full({100000}, 1.5, DType::Float16);
  expect_values(sum(x), {150000.0}, {0, 1e-6}, "sum of 100000 x 1.5 in float16");
}

TEST(Reduce, EmptyAndNaN) {
  const Tensor empty = Tensor::zeros({0});
  expect_values(sum(empty), {0.0}, {0, 0}, "sum of an empty tensor");
  EXPECT_TRUE(std::isnan(mean(empty).item())) << "mean of an empty tensor is 0/0 = NaN";
  expect_error_naming([&] { max(empty); }, {"max", "empty"}, "max of an empty tensor");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector({1.f, nan, 3.f}, {3});
  EXPECT_TRUE(std::isnan(max(x).item())) << "max must propagate NaN, not skip it";
  EXPECT_TRUE(std::isnan(sum(x).item())) << "sum must propagate NaN";
  EXPECT_FALSE(testing::compare(sum(x).to_vector(), {4.f}, {1e30, 1e30}).empty())
      << "a NaN sum must fail the comparison";
}

TEST(Reduce, SumRowsIsTheColumnSum) {
  const int64_t shapes[][2] = {{1, 1}, {3, 17}, {1000, 3}, {33, 1000}, {3, 10000}, {0, 5}};
  for (DType dt : kDtypes) {
    for (const auto& s : shapes) {
      const int64_t rows = s[0], cols = s[1];
      const Tensor x = random_tensor({rows, cols}, 22, -1.f, 1.f, dt);
      const auto v = values(x);
      std::vector<double> expect(cols, 0.0), abs_sum(cols, 0.0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) expect[c] += v[r * cols + c];
      const Tensor out = sum_rows(x);
      ASSERT_EQ(out.shape(), Shape{cols});
      ASSERT_EQ(out.dtype(), DType::Float32);
      expect_values(out, expect, {1e-6 * rows, 1e-6},
                    std::string("sum_rows ") + testing::name(dt) + " [" + std::to_string(rows) +
                        ", " + std::to_string(cols) + "]");
    }
  }
  // A 3-D tensor: every leading dimension counts as rows.
  const Tensor x3 = Tensor::ones({2, 3, 4});
  expect_values(sum_rows(x3), {6, 6, 6, 6}, {0, 0}, "sum_rows of ones [2, 3, 4]");
}

TEST(Reduce, RejectsIntegerTensors) {
  expect_error_naming([&] { sum(Tensor::zeros({3}, DType::Int64)); }, {"sum", "int64"},
                      "sum of an int64 tensor");
}

}  // namespace
}  // namespace gtl::ops
