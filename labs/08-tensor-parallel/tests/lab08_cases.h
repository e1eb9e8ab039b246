// The inputs every lab 08 test draws, the unsharded layers it compares with and the bounds it
// allows, shared by the tests and the judge (judge/lab08_judge.cpp) so that both draw exactly the
// same thing. The references that compute what a TODO computes (step 1's split of the MLP, the
// grid's layout, the synchronisation's calls) are the judge's own. Every draw is
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

#include "gtl/nn/causal_self_attention.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/residual_mlp.h"
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

// What the embedding's layers are built from: the table of the case's seed + kOtherTable; the
// case's own table's rows are then written into each rank's shard, so a lookup in the table the
// constructor saw is not the expected one (VocabParallel.EmbeddingEquals*, TpProcesses).
constexpr uint64_t kOtherTable = 7919;
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

// ---- Step 4: sequence parallelism -------------------------------------------------------------
// clang-format off
constexpr int64_t kSpDim = 48;      // D of the sequence-parallel MLP: 4D = 192 splits over 2, 3, 4
constexpr int64_t kSpHidden = 4 * kSpDim;
// clang-format on
inline const std::vector<int> kSpTpSizes = {1, 2, 3, 4};

// B in {2, 3} (a rank's positions are one block of [B, T, D] only when B = 1) and T a multiple
// of 12, so that every TP size of kSpTpSizes divides it.
inline Case seeded_sp_case(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  Case c;
  c.batch = gtl::test_seed::draw(g, 2, 3);
  c.time = 12 * gtl::test_seed::draw(g, 1, 2);
  c.seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 0, 1000000));
  return c;
}

// The unsharded residual MLP (LayerNorm weight and bias drawn too: a LayerNorm at its initial
// 1 and 0 would hide a gradient's scale), its input and output gradient [B, T, D].
struct SpCase {
  std::unique_ptr<gtl::nn::ResidualMLP> full;
  Tensor x, dy;
};
inline SpCase make_sp_case(const Case& c) {
  gtl::Generator gen(c.seed);
  SpCase m;
  m.full = std::make_unique<gtl::nn::ResidualMLP>(kSpDim, gen);
  auto p = m.full->parameters();
  Tensor(p[0].value).copy_(Tensor::uniform({kSpDim}, gen, 0.5f, 1.5f));
  Tensor(p[1].value).copy_(Tensor::uniform({kSpDim}, gen, -0.5f, 0.5f));
  m.x = Tensor::normal({c.batch, c.time, kSpDim}, gen);
  m.dy = Tensor::normal({c.batch, c.time, kSpDim}, gen);
  return m;
}

// 4a's inputs: the sequence gather_sequence's shards are cut from, and rank r's partial sum for
// scatter_sequence (its own draw), each [B, T, D].
inline Tensor sp_whole(const Case& c) {
  gtl::Generator gen(c.seed + 9);
  return Tensor::normal({c.batch, c.time, kSpDim}, gen);
}
inline Tensor sp_partial(const Case& c, int rank) {
  gtl::Generator gen(c.seed + 10 + static_cast<uint64_t>(rank));
  return Tensor::normal({c.batch, c.time, kSpDim}, gen);
}

// Positions [begin, end) of every sequence of a [B, T, D] tensor, [B, end - begin, D].
inline Tensor positions(const Tensor& t, int64_t begin, int64_t end) {
  const int64_t b = t.size(0), time = t.size(1), d = t.size(2), part = end - begin;
  Tensor out = Tensor::empty({b, part, d});
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < part; ++j)
      for (int64_t e = 0; e < d; ++e)
        out.data<float>()[(i * part + j) * d + e] = t.data<float>()[(i * time + begin + j) * d + e];
  return out;
}

// A replicated gradient sum_i t_i over N rows (t_i = dy_i, or dln_i * xhat_i for the LayerNorm's
// weight): the unsharded layer sums all N rows in double and rounds once; a sequence-parallel
// rank sums its N/k rows in double, rounds, and the all-reduce adds the k float partials in rank
// order (k - 1 more roundings). Each result is within k u sum_i |t_i| of the exact sum (plus the
// double sums' N 2^-53, far below u), so the two differ by at most 2 (k + 1) u sum_i |t_i|.
// `a` and `b` [N, C] (b undefined: t_i = a_i) -> the bound per column [C].
inline std::vector<double> replicated_bound(const Tensor& a, const Tensor& b, int k) {
  const int64_t n = a.size(0), cols = a.size(1);
  std::vector<double> bound(static_cast<std::size_t>(cols), 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < cols; ++c)
      bound[static_cast<std::size_t>(c)] +=
          std::fabs(double(a.data<float>()[i * cols + c]) *
                    (b.defined() ? double(b.data<float>()[i * cols + c]) : 1.0));
  for (double& v : bound) v *= 2.0 * double(k + 1) * kU;
  return bound;
}

// ---- Step 5: data x tensor parallelism ----------------------------------------------------------
// A grid of dp replicas of a tp-way sharded model, laid out as the core's ProcessGrid lays it.
struct Grid {
  int dp = 1, tp = 1;
  int world() const { return dp * tp; }
  std::string str() const { return "DP = " + std::to_string(dp) + " x TP = " + std::to_string(tp); }
};
// World sizes 4 and 6, with each group size 2 and 3 in both roles.
inline const std::vector<Grid> kGrids = {{2, 2}, {3, 2}, {2, 3}};
// c.batch is the sequences PER REPLICA, b in {1, 2}: the whole batch is dp * b sequences. T is a
// multiple of 6, so that TP = 2 and 3 both divide it.
inline Case seeded_dp_tp_case(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  Case c;
  c.batch = gtl::test_seed::draw(g, 1, 2);
  c.time = 6 * gtl::test_seed::draw(g, 1, 2);
  c.seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 0, 1000000));
  return c;
}
inline std::string dp_tp_case_str(const Case& c) {
  return "b = " + std::to_string(c.batch) +
         " sequences per replica, T = " + std::to_string(c.time) + ", weight seed " +
         std::to_string(c.seed) + ", " + gtl::test_seed::describe();
}
// The model and the whole batch of grid g: make_sp_case's MLP, x and dy for dp * b sequences.
// Sequences [d b, (d + 1) b) are replica d's; dy is each sequence's gradient of its replica's
// loss (the mean over the replica's b sequences), so the whole batch's loss, the mean over all
// dp b sequences, is the mean of the replicas' losses.
inline SpCase make_dp_tp_case(const Case& c, const Grid& g) {
  return make_sp_case(Case{c.batch * g.dp, c.time, c.seed});
}
// Sequences [begin, end) of a [B, T, D] tensor.
inline Tensor sequences(const Tensor& t, int64_t begin, int64_t end) {
  return t.slice(begin, end).clone();
}

// The six gradients of the residual MLP (ln.weight, ln.bias, fc1.weight, fc1.bias, fc2.weight,
// fc2.bias) of the core's unsharded layer on x [B', T', D] with output gradient dy.
inline std::vector<Tensor> mlp_gradients(const SpCase& m, const Tensor& x, const Tensor& dy) {
  const int64_t n = x.size(0) * x.size(1);
  gtl::nn::Context ctx;
  m.full->forward(x.reshape({n, kSpDim}), ctx);
  m.full->backward(ctx, dy.reshape({n, kSpDim}));
  std::vector<Tensor> grads;
  for (const auto& p : m.full->parameters()) grads.push_back(p.grad.clone());
  return grads;
}
inline const std::vector<bool> kReplicated = {true, true, false, false, false, true};

// What rank (dp_rank d, tp_rank r) holds after its backward, before the synchronisation: its
// shard of the gradients of replica d's loss, and, of the replicated parameters, the
// contribution of its positions tp_slice(T) only (what a sequence-parallel rank's backward sums
// without the group). The same
// bits as a sequence-parallel backward in the core's deterministic mode with row-invariant GEMMs:
// every row is computed alone.
inline std::vector<Tensor> local_gradients(const SpCase& m, const Case& c, const Grid& g, int d,
                                           int r) {
  const Tensor x = sequences(m.x, d * c.batch, (d + 1) * c.batch);
  const Tensor dy = sequences(m.dy, d * c.batch, (d + 1) * c.batch);
  const std::vector<Tensor> whole = mlp_gradients(m, x, dy);
  const int64_t part = c.time / g.tp, cols = kSpHidden / g.tp;
  const std::vector<Tensor> mine = mlp_gradients(m, positions(x, r * part, (r + 1) * part),
                                                 positions(dy, r * part, (r + 1) * part));
  return {mine[0],
          mine[1],
          whole[2].slice(r * cols, (r + 1) * cols).clone(),
          whole[3].slice(r * cols, (r + 1) * cols).clone(),
          columns(whole[4], r * cols, (r + 1) * cols),
          mine[5]};
}

// Rank (d, r)'s part of a full gradient: its shard of fc1 (rows) and fc2 (columns), the whole of
// a replicated one.
inline Tensor shard_of(const Tensor& full, int param, const Grid& g, int r) {
  const int64_t cols = kSpHidden / g.tp;
  if (param == 2 || param == 3) return full.slice(r * cols, (r + 1) * cols).clone();
  if (param == 4) return columns(full, r * cols, (r + 1) * cols);
  return full;
}
inline std::vector<double> bound_of(const std::vector<double>& full, int param, const Grid& g,
                                    int r) {
  const int64_t cols = kSpHidden / g.tp;
  std::vector<double> out;
  if (param == 2 || param == 3) {
    const int64_t width = param == 2 ? kSpDim : 1;
    out.assign(full.begin() + r * cols * width, full.begin() + (r + 1) * cols * width);
  } else if (param == 4) {
    for (int64_t o = 0; o < kSpDim; ++o)
      for (int64_t c = r * cols; c < (r + 1) * cols; ++c) out.push_back(full[o * kSpHidden + c]);
  } else {
    out = full;
  }
  return out;
}

// One collective as the traffic check prints it: the world ranks of its group, the operation,
// its payload and what this rank sent.
inline std::string collective_str(const std::vector<int>& group, const std::string& op,
                                  int64_t bytes, int64_t sent) {
  std::string s = "group {";
  for (std::size_t i = 0; i < group.size(); ++i) s += (i ? ", " : "") + std::to_string(group[i]);
  return s + "} " + op + " " + std::to_string(bytes) + " bytes, sent " + std::to_string(sent);
}
}  // namespace lab08_cases
