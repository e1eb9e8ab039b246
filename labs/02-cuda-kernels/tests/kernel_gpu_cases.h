// The inputs of lab 02's GPU tests (kernels_test.cpp, reduce_final_test.cpp), shared with the
// lab's judge (judge/lab02_judge.cpp), which recomputes the references with the core's CPU
// operations from the same inputs. Host tensors only: the tests copy them to the GPU.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "gtl/ops/elementwise.h"
#include "gtl/tensor/tensor.h"

namespace lab02_gpu_cases {

using gtl::Tensor;

// Small integers: every product and every partial sum is exact in float32, whatever the order.
inline Tensor small_integers(const gtl::Shape& shape, uint64_t seed) {
  gtl::Generator g(seed);
  std::vector<float> v = Tensor::uniform(shape, g, -2.5f, 2.5f).to_vector();
  for (float& x : v) x = std::round(x);
  return Tensor::from_vector(v, shape);
}

// ---- reduction: each size at offsets 0 and 1 (one float past a 16-byte boundary) ---------------
inline const std::vector<int64_t>& reduce_sizes() {
  static const std::vector<int64_t> sizes = {1, 7, 255, 256, 257, 1000003, (int64_t{1} << 24) + 3};
  return sizes;
}
inline Tensor reduce_input(int64_t n) {
  gtl::Generator g(static_cast<uint64_t>(n));
  return Tensor::uniform({n}, g, -1.f, 1.f);
}
inline Tensor reduce_integers() {
  return small_integers({1 << 20}, 3);
}

// ---- transpose, SGEMM --------------------------------------------------------------------------
inline const std::vector<std::pair<int, int>>& transpose_shapes() {
  static const std::vector<std::pair<int, int>> shapes = {{1, 1},   {1, 37},      {37, 1},
                                                          {33, 65}, {1024, 1000}, {4097, 31}};
  return shapes;
}
inline Tensor transpose_input(int rows, int cols) {
  gtl::Generator g(static_cast<uint64_t>(rows * 7 + cols));
  return Tensor::uniform({rows, cols}, g);
}
inline const std::vector<std::array<int, 3>>& gemm_shapes() {
  static const std::vector<std::array<int, 3>> shapes = {
      {1, 1, 1},     {3, 5, 7},     {17, 33, 65},   {129, 127, 255},
      {128, 128, 8}, {300, 200, 1}, {512, 512, 512}};
  return shapes;
}
inline std::pair<Tensor, Tensor> gemm_random(int m, int n, int k) {
  gtl::Generator g(static_cast<uint64_t>(m + n + k));
  Tensor a = Tensor::uniform({m, k}, g, -1.f, 1.f);
  Tensor b = Tensor::uniform({k, n}, g, -1.f, 1.f);
  return {a, b};
}

// ---- softmax: (rows, cols, logit scale), -inf in the first and middle column --------------------
inline const std::vector<std::tuple<int, int, float>>& softmax_cases() {
  static const std::vector<std::tuple<int, int, float>> cases = {
      {1, 1, 1.f}, {3, 7, 1.f}, {5, 1000, 3.f}, {2, 100000, 1.f}, {64, 4096, 1e4f}};
  return cases;
}
inline Tensor softmax_input(int rows, int cols, float scale) {
  gtl::Generator g(static_cast<uint64_t>(cols));
  std::vector<float> values = Tensor::uniform({rows, cols}, g, -scale, scale).to_vector();
  if (cols > 2)
    for (int r = 0; r < rows; ++r)
      values[int64_t{r} * cols] = values[int64_t{r} * cols + cols / 2] = -INFINITY;
  return Tensor::from_vector(values, {rows, cols});
}

// ---- layernorm: (rows, cols, mean offset); x, weight, bias --------------------------------------
inline const std::vector<std::tuple<int, int, float>>& layernorm_cases() {
  static const std::vector<std::tuple<int, int, float>> cases = {
      {1, 1, 0.f}, {3, 7, 0.f}, {5, 1000, 0.f}, {2, 100000, 0.f}, {64, 768, 1e4f}};
  return cases;
}
inline std::array<Tensor, 3> layernorm_input(int rows, int cols, float offset) {
  gtl::Generator g(static_cast<uint64_t>(cols + 1));
  Tensor x = gtl::ops::add(Tensor::normal({rows, cols}, g), Tensor::full({rows, cols}, offset));
  Tensor w = Tensor::uniform({cols}, g, 0.5f, 1.5f);
  Tensor b = Tensor::uniform({cols}, g);
  return {x, w, b};
}
inline const std::vector<std::pair<int, int>>& layernorm_backward_cases() {
  static const std::vector<std::pair<int, int>> cases = {{1, 1}, {3, 7}, {5, 1000}, {300, 768}};
  return cases;
}
// x, dy, weight, bias.
inline std::array<Tensor, 4> layernorm_backward_input(int rows, int cols) {
  gtl::Generator g(static_cast<uint64_t>(rows * 31 + cols));
  Tensor x = Tensor::normal({rows, cols}, g);
  Tensor dy = Tensor::normal({rows, cols}, g);
  Tensor w = Tensor::uniform({cols}, g, 0.5f, 1.5f);
  Tensor b = Tensor::uniform({cols}, g);
  return {x, dy, w, b};
}

// ---- bias + GELU: (rows, cols); x, bias ---------------------------------------------------------
inline const std::vector<std::pair<int, int>>& bias_gelu_cases() {
  static const std::vector<std::pair<int, int>> cases = {{1, 1}, {3, 7}, {1000, 1003}};
  return cases;
}
inline std::pair<Tensor, Tensor> bias_gelu_input(int rows, int cols) {
  gtl::Generator g(static_cast<uint64_t>(rows + cols));
  Tensor x = Tensor::normal({rows, cols}, g, 0.f, 3.f);
  Tensor bias = Tensor::normal({cols}, g);
  return {x, bias};
}

}  // namespace lab02_gpu_cases
