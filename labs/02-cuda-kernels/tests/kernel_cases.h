// The inputs and references of lab 02's emulated tests, shared by the tests and the lab's judge
// (judge/lab02_judge.cpp): the judge draws the same inputs from the grading seed and recomputes
// the references in double precision, without the student's code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "gtl_test_seed.h"

namespace lab02_cases {

inline std::vector<float> uniform(size_t n, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// ---- reduction: (n, offset in floats past an aligned address), two drawn from the seed --------
inline std::vector<std::pair<int64_t, int>> reduce_cases(const char* test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  std::vector<std::pair<int64_t, int>> cases;
  for (int64_t n : {1, 2, 3, 5, 31, 33, 255, 256, 257, 1000, 4097, 70001})
    for (int offset : {0, 1}) cases.push_back({n, offset});
  for (int i = 0; i < 2; ++i)
    cases.push_back({gtl::test_seed::draw(g, 1, 100000), int(gtl::test_seed::draw(g, 0, 3))});
  return cases;
}
// The buffer of a case: x starts `offset` floats into it.
inline std::vector<float> reduce_buffer(int64_t n, int offset) {
  return uniform(size_t(n + offset), -1.f, 1.f, unsigned(n));
}
// The exact sum and the sum of magnitudes (the tolerance scales with it).
inline std::pair<double, double> reduce_reference(const float* x, int64_t n) {
  double exact = 0, magnitude = 0;
  for (int64_t i = 0; i < n; ++i) exact += x[i], magnitude += std::fabs(x[i]);
  return {exact, magnitude};
}
inline bool reduce_close(float got, double exact, double magnitude) {
  return std::fabs(got - exact) <= 1e-5 * magnitude + 1e-6;  // false for NaN
}

// ---- block_reduce twice in a row (TODO 1b): one block of `threads`, n <= threads values --------
inline std::vector<std::pair<int, int>> block_twice_cases() {
  return {{32, 32},   {32, 5},    {64, 64},     {96, 70},
          {256, 256}, {256, 200}, {1024, 1024}, {1024, 1000}};
}
inline std::vector<float> block_twice_input(int n) {
  return uniform(size_t(n), -1.f, 1.f, unsigned(n) + 17);
}

// ---- transpose: odd shapes and one drawn from the seed ------------------------------------------
inline std::vector<std::pair<int, int>> transpose_shapes() {
  std::vector<std::pair<int, int>> shapes = {{1, 1},   {1, 37},  {37, 1},
                                             {33, 65}, {64, 64}, {100, 37}};
  std::mt19937_64 g = gtl::test_seed::generator("EmulatedTranspose");
  shapes.push_back({int(gtl::test_seed::draw(g, 1, 150)), int(gtl::test_seed::draw(g, 1, 150))});
  return shapes;
}
inline std::vector<float> transpose_input(int rows, int cols) {
  return uniform(size_t(rows) * cols, -1.f, 1.f, unsigned(rows * 7 + cols));
}
inline std::vector<double> transpose_reference(const std::vector<float>& in, int rows, int cols) {
  std::vector<double> out(in.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) out[size_t(c) * rows + r] = in[size_t(r) * cols + c];
  return out;
}

// ---- SGEMM: edge shapes (M, N, K) and one drawn from the seed -----------------------------------
inline std::vector<std::tuple<int, int, int>> sgemm_shapes() {
  std::vector<std::tuple<int, int, int>> shapes = {{1, 1, 1},     {7, 5, 3},     {33, 65, 17},
                                                   {128, 128, 8}, {129, 131, 9}, {200, 130, 70}};
  std::mt19937_64 g = gtl::test_seed::generator("EmulatedSgemm");
  shapes.push_back({int(gtl::test_seed::draw(g, 1, 160)), int(gtl::test_seed::draw(g, 1, 160)),
                    int(gtl::test_seed::draw(g, 1, 80))});
  return shapes;
}
inline std::vector<float> sgemm_a(int m, int k) {
  return uniform(size_t(m) * k, -1.f, 1.f, 1);
}
inline std::vector<float> sgemm_b(int k, int n) {
  return uniform(size_t(k) * n, -1.f, 1.f, 2);
}
inline std::vector<double> sgemm_reference(const std::vector<float>& a, const std::vector<float>& b,
                                           int m, int n, int k) {
  std::vector<double> c(size_t(m) * n, 0.0);
  for (int i = 0; i < m; ++i)
    for (int p = 0; p < k; ++p)
      for (int j = 0; j < n; ++j)
        c[size_t(i) * n + j] += double(a[size_t(i) * k + p]) * b[size_t(p) * n + j];
  return c;
}

// ---- softmax: (rows, cols, logit scale), some logits masked to -inf -----------------------------
inline const std::vector<std::tuple<int, int, float>>& softmax_cases() {
  static const std::vector<std::tuple<int, int, float>> cases = {
      {1, 1, 1.f}, {3, 7, 1.f}, {5, 33, 1e4f}, {4, 1000, 3.f}, {2, 8192, 1e4f}, {3, 257, 1.f}};
  return cases;
}
// Masked logits (-inf), as attention uses them, in the first and middle column of every row.
inline std::vector<float> softmax_input(int rows, int cols, float scale) {
  std::vector<float> x = uniform(size_t(rows) * cols, -scale, scale, unsigned(cols));
  if (cols > 2)
    for (int r = 0; r < rows; ++r) x[size_t(r) * cols] = x[size_t(r) * cols + cols / 2] = -INFINITY;
  return x;
}
inline std::vector<double> softmax_reference(const std::vector<float>& x, int rows, int cols) {
  std::vector<double> y(x.size());
  for (int r = 0; r < rows; ++r) {
    const float* xr = x.data() + size_t(r) * cols;
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, double(xr[c]));
    for (int c = 0; c < cols; ++c) s += std::exp(xr[c] - m);
    for (int c = 0; c < cols; ++c) y[size_t(r) * cols + c] = std::exp(xr[c] - m) / s;
  }
  return y;
}

// ---- layernorm forward: (rows, cols, mean offset) -----------------------------------------------
constexpr float kLayerNormEps = 1e-5f;
inline const std::vector<std::tuple<int, int, float>>& layernorm_cases() {
  static const std::vector<std::tuple<int, int, float>> cases = {
      {1, 1, 0.f}, {3, 2, 0.f}, {5, 33, 0.f}, {4, 1000, 0.f}, {2, 8192, 0.f}, {3, 768, 1e4f}};
  return cases;
}
struct LayerNormInput {
  std::vector<float> x, w, b;
};
inline LayerNormInput layernorm_input(int rows, int cols, float offset) {
  return {uniform(size_t(rows) * cols, offset - 1, offset + 1, unsigned(cols)),
          uniform(size_t(cols), 0.5f, 1.5f, 3), uniform(size_t(cols), -1.f, 1.f, 4)};
}
struct LayerNormReference {
  std::vector<double> y, mean, rstd;
};
inline LayerNormReference layernorm_reference(const LayerNormInput& in, int rows, int cols) {
  LayerNormReference ref{std::vector<double>(in.x.size()), std::vector<double>(rows),
                         std::vector<double>(rows)};
  for (int r = 0; r < rows; ++r) {
    const float* xr = in.x.data() + size_t(r) * cols;
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) mean += xr[c];
    mean /= cols;
    for (int c = 0; c < cols; ++c) var += (xr[c] - mean) * (xr[c] - mean);
    const double rstd = 1 / std::sqrt(var / cols + kLayerNormEps);
    ref.mean[r] = mean, ref.rstd[r] = rstd;
    for (int c = 0; c < cols; ++c)
      ref.y[size_t(r) * cols + c] = (xr[c] - mean) * rstd * in.w[c] + in.b[c];
  }
  return ref;
}
// At a mean of 1e4, float32 resolves x to 1e-3 and the mean rounded to float is off by up to half
// of that: (x - mean) * rstd * w is off by ~2e-3 in any float32 kernel (rstd ~1.7 here), while
// a variance that cancels (two numbers near 1e8 subtracted) is off by O(1). The tolerance follows
// the offset.
inline double layernorm_tolerance(float offset) {
  return offset > 0 ? 5e-3 : 1e-4;
}

// ---- layernorm backward: (rows, cols) ----------------------------------------------------------
inline const std::vector<std::pair<int, int>>& layernorm_backward_cases() {
  static const std::vector<std::pair<int, int>> cases = {{1, 1}, {3, 7}, {5, 1000}, {40, 257}};
  return cases;
}
struct LayerNormBackwardCase {
  std::vector<float> x, dy, w, mean, rstd;  // inputs (mean and rstd as the forward saved them)
  std::vector<double> dx, dw, db;           // references
};
inline LayerNormBackwardCase layernorm_backward_case(int rows, int cols) {
  LayerNormBackwardCase k{uniform(size_t(rows) * cols, -2.f, 2.f, unsigned(rows)),
                          uniform(size_t(rows) * cols, -1.f, 1.f, unsigned(cols)),
                          uniform(size_t(cols), 0.5f, 1.5f, 5),
                          std::vector<float>(rows),
                          std::vector<float>(rows),
                          std::vector<double>(size_t(rows) * cols),
                          std::vector<double>(cols, 0.0),
                          std::vector<double>(cols, 0.0)};
  for (int r = 0; r < rows; ++r) {
    const float* xr = k.x.data() + size_t(r) * cols;
    const float* dyr = k.dy.data() + size_t(r) * cols;
    double m = 0, var = 0;
    for (int c = 0; c < cols; ++c) m += xr[c];
    m /= cols;
    for (int c = 0; c < cols; ++c) var += (xr[c] - m) * (xr[c] - m);
    k.mean[r] = float(m), k.rstd[r] = float(1 / std::sqrt(var / cols + 1e-5));
    double sum_dxhat = 0, sum_dxhat_xhat = 0;
    for (int c = 0; c < cols; ++c) {
      const double xhat = (xr[c] - double(k.mean[r])) * k.rstd[r];
      sum_dxhat += double(dyr[c]) * k.w[c];
      sum_dxhat_xhat += double(dyr[c]) * k.w[c] * xhat;
      k.dw[c] += dyr[c] * xhat;
      k.db[c] += dyr[c];
    }
    for (int c = 0; c < cols; ++c) {
      const double xhat = (xr[c] - double(k.mean[r])) * k.rstd[r];
      k.dx[size_t(r) * cols + c] =
          k.rstd[r] * (double(dyr[c]) * k.w[c] - sum_dxhat / cols - xhat * sum_dxhat_xhat / cols);
    }
  }
  return k;
}

// ---- bias + GELU: (rows, cols) ------------------------------------------------------------------
inline const std::vector<std::pair<int, int>>& bias_gelu_cases() {
  static const std::vector<std::pair<int, int>> cases = {{1, 1}, {3, 5}, {17, 1000}};
  return cases;
}
inline std::vector<float> bias_gelu_x(int rows, int cols) {
  return uniform(size_t(rows) * cols, -4.f, 4.f, unsigned(rows));
}
inline std::vector<float> bias_gelu_bias(int cols) {
  return uniform(size_t(cols), -1.f, 1.f, unsigned(cols));
}
inline std::vector<double> bias_gelu_reference(const std::vector<float>& x,
                                               const std::vector<float>& bias, int cols) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = double(x[i]) + bias[i % cols];
    y[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  return y;
}

}  // namespace lab02_cases
