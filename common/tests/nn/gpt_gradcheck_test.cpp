// The GPT's layers against references independent of the core's ops.
//
// The core has no float64 tensors, so each check uses a naive forward in double (loops, no ops/
// calls; gpt_reference.h): for L = sum r * layer(x) with a fixed random r, the derivative of that
// double forward by central differences (h = 1e-5; its error ~1e-9, far below the tolerance)
// is the reference for the layer's float32 backward. Tolerance (stated): |analytic - reference|
// <= 2e-4 + 2e-3 |reference| (float32 forward and backward rounding; a wrong term is off by O(1)).
// Embedding gradients are sums of dy rows: checked exactly against the sums in double.
// Attention runs with T = 1 (a single position: softmax of one score), T = 5 and T = 13 (not a
// multiple of any tile size or warp), and 1, 2 and 4 heads. The block and the whole GPT are
// checked by float32 central differences, as the other layers (gradcheck_test.cpp).
#include <cmath>
#include <functional>

#include "gpt_reference.h"
#include "gpt_test_util.h"
#include "gtl/nn/causal_self_attention.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/gpt_block.h"
#include "gtl/nn/position_embedding.h"
#include "gtl/nn/token_embedding.h"
#include "gtl/ops/cross_entropy.h"
#include "gtl_test.h"

using namespace gtl;
using gtl::testing::ids_tensor;
using gtl::testing::Tolerance;
using gtl::testing::ref::attention_ref;
using gtl::testing::ref::to_double;

namespace {

constexpr Tolerance kTol{2e-4, 2e-3};

double dot(const std::vector<double>& y, const std::vector<float>& r) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

// Central differences of a double objective over element i of `v`.
double fd(std::vector<double>& v, std::size_t i, const std::function<double()>& objective) {
  const double h = 1e-5, orig = v[i];
  v[i] = orig + h;
  const double lp = objective();
  v[i] = orig - h;
  const double lm = objective();
  v[i] = orig;
  return (lp - lm) / (2 * h);
}

void check_attention(int64_t B, int64_t T, int64_t D, int64_t H, uint64_t seed) {
  SCOPED_TRACE("attention B=" + std::to_string(B) + " T=" + std::to_string(T) +
               " D=" + std::to_string(D) + " H=" + std::to_string(H));
  Generator gen(seed);
  nn::CausalSelfAttention attn(D, H, gen);
  const Tensor x = Tensor::normal({B, T, D}, gen);
  nn::Context ctx;
  const Tensor y = attn.forward(x, ctx);
  const Tensor r = Tensor::normal(y.shape(), gen);
  const std::vector<float> rv = r.to_vector();
  const Tensor dx = attn.backward(ctx, r);
  const std::vector<nn::ParamRef> ps = attn.parameters();  // qkv.w, qkv.b, proj.w, proj.b
  ASSERT_EQ(ps.size(), 4u);
  std::vector<std::vector<double>> vals = {to_double(x)};
  for (const auto& p : ps) vals.push_back(to_double(p.value));
  auto objective = [&] {
    return dot(attention_ref(vals[0], vals[1], vals[2], vals[3], vals[4], B, T, D, H), rv);
  };
  // The forward itself first: the reference must agree before its derivative means anything.
  std::vector<double> ref = attention_ref(vals[0], vals[1], vals[2], vals[3], vals[4], B, T, D, H);
  EXPECT_EQ(gtl::testing::compare(y.to_vector(), std::vector<float>(ref.begin(), ref.end()), kTol),
            "")
      << "forward differs from the naive double attention";
  std::vector<Tensor> analytic = {dx};
  for (const auto& p : ps) analytic.push_back(p.grad);
  const char* names[] = {"dx", "dWqkv", "dbqkv", "dWo", "dbo"};
  for (std::size_t t = 0; t < vals.size(); ++t) {
    const std::vector<float> a = analytic[t].to_vector();
    std::vector<float> got, want;
    const std::size_t stride = std::max<std::size_t>(1, vals[t].size() / 40);
    for (std::size_t i = 0; i < vals[t].size(); i += stride) {
      got.push_back(a[i]);
      want.push_back(static_cast<float>(fd(vals[t], i, objective)));
    }
    EXPECT_EQ(gtl::testing::compare(got, want, kTol), "")
        << names[t] << " disagrees with the double reference's derivative";
  }
}

// float32 central differences of L = sum r * f(), over `n` spread elements of `t` (CPU).
std::vector<float> fd32(const Tensor& t, const std::function<double()>& objective) {
  float* p = t.data<float>();
  std::vector<float> out;
  const int64_t stride = std::max<int64_t>(1, t.numel() / 24);
  for (int64_t i = 0; i < t.numel(); i += stride) {
    const float orig = p[i];
    const float plus = orig + 1e-2f, minus = orig - 1e-2f;
    p[i] = plus;
    const double lp = objective();
    p[i] = minus;
    const double lm = objective();
    p[i] = orig;
    out.push_back(static_cast<float>((lp - lm) / (static_cast<double>(plus) - minus)));
  }
  return out;
}

std::vector<float> pick(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  std::vector<float> out;
  const int64_t stride = std::max<int64_t>(1, t.numel() / 24);
  for (int64_t i = 0; i < t.numel(); i += stride) out.push_back(v[static_cast<std::size_t>(i)]);
  return out;
}

}  // namespace

TEST(GptGradCheck, AttentionAgainstNaiveDouble) {
  check_attention(2, 5, 8, 2, 1);
}

TEST(GptGradCheck, AttentionSinglePosition) {
  check_attention(3, 1, 8, 4, 2);  // T = 1: each query sees only itself, softmax of one score
}

TEST(GptGradCheck, AttentionOddLengthOneAndFourHeads) {
  check_attention(1, 13, 8, 1, 3);
  check_attention(2, 13, 16, 4, 4);
}

TEST(GptGradCheck, TokenEmbeddingScatterAddIsExact) {
  Generator gen(5);
  nn::TokenEmbedding emb(7, 3, gen);
  const std::vector<int64_t> ids = {3, 0, 3, 6, 3, 1};  // repeated ids add into one row
  nn::Context ctx;
  const Tensor y = emb.forward(ids_tensor(ids, {2, 3}), ctx);
  const std::vector<float> w = emb.weight().value.to_vector();
  const std::vector<float> yv = y.to_vector();
  for (std::size_t n = 0; n < ids.size(); ++n)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(yv[n * 3 + c], w[static_cast<std::size_t>(ids[n] * 3 + c)]);
  const Tensor dy = Tensor::normal({2, 3, 3}, gen);
  const std::vector<float> g = dy.to_vector();
  EXPECT_FALSE(emb.backward(ctx, dy).defined()) << "integer ids have no gradient";
  std::vector<double> want(21, 0.0);
  for (std::size_t n = 0; n < ids.size(); ++n)
    for (int64_t c = 0; c < 3; ++c) want[static_cast<std::size_t>(ids[n] * 3 + c)] += g[n * 3 + c];
  const std::vector<float> got = emb.weight().grad.to_vector();
  // Row 3 adds three float32 values in order: within one rounding of the double sum.
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6) << "dW[" << i << "]";
}

TEST(GptGradCheck, PositionEmbeddingSumsOverTheBatch) {
  Generator gen(6);
  nn::PositionEmbedding pos(6, 2, gen);
  const Tensor x = Tensor::normal({3, 4, 2}, gen);
  nn::Context ctx;
  const Tensor y = pos.forward(x, ctx);
  const std::vector<float> xv = x.to_vector(), yv = y.to_vector(),
                           w = pos.weight().value.to_vector();
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(yv[b * 8 + i], xv[b * 8 + i] + w[i]);
  const Tensor dy = Tensor::normal({3, 4, 2}, gen);
  const std::vector<float> g = dy.to_vector();
  const Tensor dx = pos.backward(ctx, dy);
  EXPECT_EQ(dx.to_vector(), g);
  const std::vector<float> dw = pos.weight().grad.to_vector();
  for (int64_t i = 0; i < 12; ++i) {
    const double want = i < 8 ? double{g[i]} + g[8 + i] + g[16 + i] : 0.0;  // rows 4, 5: unused
    EXPECT_NEAR(dw[i], want, 1e-6) << "dP[" << i << "]";
  }
}

TEST(GptGradCheck, BlockByFiniteDifferences) {
  Generator gen(7);
  nn::GPTBlock block(8, 2, gen);
  const Tensor x = Tensor::normal({2, 5, 8}, gen);
  nn::Context ctx;
  const Tensor y = block.forward(x, ctx);
  const Tensor r = Tensor::normal(y.shape(), gen);
  const std::vector<float> rv = r.to_vector();
  const Tensor dx = block.backward(ctx, r);
  auto objective = [&] {
    nn::Context c;
    const std::vector<float> v = block.forward(x, c).to_vector();
    double s = 0;
    for (std::size_t i = 0; i < v.size(); ++i) s += static_cast<double>(v[i]) * rv[i];
    return s;
  };
  const Tolerance tol{1e-3, 5e-3};  // float32 forward noise amplified by 1/2h (gradcheck_test)
  EXPECT_EQ(gtl::testing::compare(pick(dx), fd32(x, objective), tol), "") << "dx";
  for (const nn::ParamRef& p : block.parameters()) {
    const Tensor analytic = p.grad.clone();
    EXPECT_EQ(gtl::testing::compare(pick(analytic), fd32(p.value, objective), tol), "") << p.name;
  }
}

// The whole GPT through its loss: tied and untied heads (the tied table gets both gradients).
void check_gpt(bool tie) {
  SCOPED_TRACE(tie ? "tied head" : "untied head");
  nn::GPTConfig c;
  c.vocab = 11;
  c.context = 6;
  c.dim = 8;
  c.layers = 2;
  c.heads = 2;
  c.tie_head = tie;
  c.seed = 8;
  nn::GPT gpt(c);
  Generator gen(9);
  // Embeddings of std 1 instead of 0.02: a +-h step of 1e-2 on a 0.02-sized entry would move
  // the first LayerNorm's input by half its size, far outside the linear range FD assumes.
  for (const nn::ParamRef& p : gpt.parameters()) {
    if (p.name.find("wte") != std::string::npos || p.name.find("wpe") != std::string::npos) {
      Tensor(p.value).copy_(Tensor::normal(p.value.shape(), gen));
    }
  }
  std::vector<int64_t> ids, targets;
  for (int i = 0; i < 10; ++i) ids.push_back((i * 7 + 3) % 11);
  for (int i = 0; i < 10; ++i) targets.push_back((i * 5 + 1) % 11);
  const Tensor in = ids_tensor(ids, {2, 5}), tg = ids_tensor(targets, {10});
  nn::Context ctx;
  const Tensor logits = gpt.forward(in, ctx);
  ASSERT_EQ(logits.shape(), (Shape{10, 11}));
  gpt.backward(ctx, ops::cross_entropy_backward(logits, tg));
  auto objective = [&] {
    nn::Context cx;
    return static_cast<double>(ops::cross_entropy(gpt.forward(in, cx), tg).item());
  };
  const Tolerance tol{2e-4, 5e-3};
  for (const nn::ParamRef& p : gpt.parameters()) {
    const Tensor analytic = p.grad.clone();
    EXPECT_EQ(gtl::testing::compare(pick(analytic), fd32(p.value, objective), tol), "") << p.name;
  }
}

TEST(GptGradCheck, WholeModelTiedHead) {
  check_gpt(true);
}

TEST(GptGradCheck, WholeModelUntiedHead) {
  check_gpt(false);
}
