// The inputs every lab 08 test draws and the references it compares with, shared by the tests and
// the judge (judge/lab08_judge.cpp) so that both compute exactly the same thing. Every draw is
// named after the test that uses it (gtl::test_seed::generator): the grading seed chooses the
// batch, the sequence length and the weights; outside the grader the seed is 1.
//
// References are the core's UNSHARDED layers (nn::Linear, nn::GELU, nn::CausalSelfAttention,
// nn::TokenEmbedding, ops::cross_entropy), run with ops::ScopedRowInvariant on (every rank's
// thread, too): each row of a GEMM is then one matrix-vector product, whatever the number of rows
// and columns of the call, so a rank's slice of a product has the bits of the unsharded product's
// columns. What TP does NOT keep bitwise is a sum it cuts: a row-parallel product (and the dx of a
// column-parallel one) adds K terms as k partial sums of K/k terms; in another order the two
// results differ by at most 2 (K + 2) u sum_j |a_j w_j| (+ the bias), u = 2^-24 (each order is
// within (K - 1) u of the exact sum, the bias add rounds once more). contraction_bound computes it.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtl/nn/activation.h"
#include "gtl/nn/causal_self_attention.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/token_embedding.h"
#include "gtl/tensor/tensor.h"
#include "gtl_test_seed.h"

namespace lab08_cases {

using gtl::Tensor;

// clang-format off
constexpr int64_t kDim = 64;      // D: divisible by every TP size tested
constexpr int64_t kHeads = 4;     // H: TP = 1, 2, 4 split it
constexpr int64_t kHidden = 256;  // the MLP's 4D
constexpr int64_t kVocab = 256;   // the byte vocabulary of the core's GPT
constexpr double kU = 1.0 / 16777216.0;  // 2^-24, float32's unit roundoff
// clang-format on
inline const std::vector<int> kTpSizes = {1, 2, 4};

// A seeded case: batch B, sequence length T, and the seed of the weights and the data.
struct Case {
  int64_t batch = 0, time = 0;
  uint64_t seed = 0;
  int64_t rows() const { return batch * time; }
  std::string str() const {
    return "B = " + std::to_string(batch) + ", T = " + std::to_string(time) + ", weight seed " +
           std::to_string(seed) + ", " + gtl::test_seed::describe();
  }
};
inline Case seeded_case(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  Case c;
  c.batch = gtl::test_seed::draw(g, 1, 3);
  c.time = gtl::test_seed::draw(g, 2, 9);
  c.seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 0, 1000000));
  return c;
}

// The unsharded MLP's two layers and the input and output gradient of a case.
struct MlpCase {
  std::unique_ptr<gtl::nn::Linear> fc1, fc2;
  Tensor x, dy;  // [N, D]
};
inline MlpCase make_mlp_case(const Case& c) {
  gtl::Generator gen(c.seed);
  MlpCase m;
  m.fc1 = std::make_unique<gtl::nn::Linear>(kDim, kHidden, gen);
  m.fc2 = std::make_unique<gtl::nn::Linear>(kHidden, kDim, gen);
  m.x = Tensor::normal({c.rows(), kDim}, gen);
  m.dy = Tensor::normal({c.rows(), kDim}, gen);
  return m;
}

inline std::unique_ptr<gtl::nn::CausalSelfAttention> make_attention(uint64_t seed, int64_t dim,
                                                                    int64_t heads) {
  gtl::Generator gen(seed);
  return std::make_unique<gtl::nn::CausalSelfAttention>(dim, heads, gen);
}
// The attention's input and output gradient [B, T, D] (drawn after the weights' own draws).
inline std::pair<Tensor, Tensor> attention_data(const Case& c) {
  gtl::Generator gen(c.seed + 1);
  Tensor x = Tensor::normal({c.batch, c.time, kDim}, gen);
  Tensor dy = Tensor::normal({c.batch, c.time, kDim}, gen);
  return {x, dy};
}

inline std::unique_ptr<gtl::nn::TokenEmbedding> make_embedding(uint64_t seed) {
  gtl::Generator gen(seed);
  return std::make_unique<gtl::nn::TokenEmbedding>(kVocab, kDim, gen);
}
// ids [B, T] in [0, V), int64.
inline Tensor make_ids(const Case& c) {
  std::mt19937_64 g(c.seed + 2);
  Tensor ids = Tensor::empty({c.batch, c.time}, gtl::DType::Int64);
  for (int64_t i = 0; i < ids.numel(); ++i)
    ids.data<int64_t>()[i] = static_cast<int64_t>(g() % static_cast<uint64_t>(kVocab));
  return ids;
}
// Full logits [N, V] uniform in [low, high), labels [N].
inline std::pair<Tensor, Tensor> make_logits(const Case& c, float low, float high) {
  gtl::Generator gen(c.seed + 3);
  Tensor logits = Tensor::uniform({c.rows(), kVocab}, gen, low, high);
  std::mt19937_64 g(c.seed + 4);
  Tensor labels = Tensor::empty({c.rows()}, gtl::DType::Int64);
  for (int64_t i = 0; i < c.rows(); ++i)
    labels.data<int64_t>()[i] = static_cast<int64_t>(g() % static_cast<uint64_t>(kVocab));
  return {logits, labels};
}
// Columns [begin, end) of a [rows, cols] float32 tensor.
inline Tensor columns(const Tensor& t, int64_t begin, int64_t end) {
  const int64_t rows = t.size(0), n = t.size(1);
  Tensor out = Tensor::empty({rows, end - begin});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = begin; j < end; ++j)
      out.data<float>()[i * (end - begin) + j - begin] = t.data<float>()[i * n + j];
  return out;
}

// Per element of y = a w^T + b (a [N, K], w [M, K], b [M] or undefined): the bound on the
// difference of two summation orders, 2 (K + 2) u (sum_j |a_ij w_mj| + |b_m|). `w_rows_are_k`:
// w is [K, M] (y = a w) instead.
inline std::vector<double> contraction_bound(const Tensor& a, const Tensor& w, const Tensor& b,
                                             bool w_rows_are_k = false) {
  const int64_t n = a.size(0), k = a.size(1), m = w_rows_are_k ? w.size(1) : w.size(0);
  const float* pa = a.data<float>();
  const float* pw = w.data<float>();
  std::vector<double> bound(static_cast<std::size_t>(n * m));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < m; ++o) {
      double s = b.defined() ? std::fabs(double(b.data<float>()[o])) : 0.0;
      for (int64_t j = 0; j < k; ++j)
        s += std::fabs(double(pa[i * k + j])) *
             std::fabs(double(w_rows_are_k ? pw[j * m + o] : pw[o * k + j]));
      bound[static_cast<std::size_t>(i * m + o)] = 2.0 * double(k + 2) * kU * s;
    }
  return bound;
}

// The loss's bound: the sum of exp over V terms in another order (float against the core's
// double) moves log s by at most (V + 2) u, the mean over N rows adds N u |loss|; doubled.
inline double loss_bound(double loss, int64_t rows) {
  return 2.0 * double(kVocab + rows + 8) * kU * (1.0 + std::fabs(loss));
}
// dlogits = (p - onehot) / N: p = exp(x - m) / s moves by (2V + 4) u p, the subtraction and the
// scale round once each; doubled.
inline double dlogit_bound(double reference, bool is_label, int64_t rows) {
  const double p = reference * double(rows) + (is_label ? 1.0 : 0.0);
  return 2.0 * double(2 * kVocab + 8) * kU * (std::fabs(p) + std::fabs(reference) * double(rows)) /
         double(rows);
}

}  // namespace lab08_cases
