// Helpers for the ops tests: random inputs, double-precision views of tensors, central finite
// differences, and a comparison of a tensor against double-precision expected values.
//
// The references in the tests are plain double loops over the *rounded* inputs (the values the
// op actually sees after a float16/bfloat16 input was rounded), so the only differences left are
// the op's float32 arithmetic and the final rounding of its output.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

namespace gtl::testing {

inline Tensor random_tensor(const Shape& shape, uint64_t seed, float low, float high,
                            DType dtype = DType::Float32) {
  Generator gen(seed);
  return Tensor::uniform(shape, gen, low, high, dtype);
}

// The tensor's values (exactly as stored, widened) as doubles.
inline std::vector<double> values(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  return std::vector<double>(v.begin(), v.end());
}

// Checks `actual` against double-precision `expected` (rounded to float for the comparison).
inline void expect_values(const Tensor& actual, const std::vector<double>& expected, Tolerance tol,
                          const std::string& what) {
  ASSERT_EQ(static_cast<std::size_t>(actual.numel()), expected.size()) << what << ": sizes differ";
  const std::vector<float> e(expected.begin(), expected.end());
  const std::string err = compare(actual.to_vector(), e, tol);
  EXPECT_TRUE(err.empty()) << what << ": " << err;
}

// Central differences: g_i = (f(x + h e_i) - f(x - h e_i)) / 2h, all in double.
inline std::vector<double> numeric_gradient(
    const std::function<double(const std::vector<double>&)>& f, std::vector<double> x,
    double h = 1e-6) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = f(x);
    x[i] = saved - h;
    const double minus = f(x);
    x[i] = saved;
    g[i] = (plus - minus) / (2 * h);
  }
  return g;
}

// sum_i w_i * y_i: the scalar loss whose gradient with respect to y is w (the "dout").
inline double dot(const std::vector<double>& w, const std::vector<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < w.size(); ++i) s += w[i] * y[i];
  return s;
}

inline const char* name(DType t) {
  return dtype_name(t);
}

}  // namespace gtl::testing
