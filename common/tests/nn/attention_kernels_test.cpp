// The attention-kernels seam (nn/attention_kernels.h) on the CPU, with two kernel sets written
// here:
//   - "reference in pieces": the reference path's own ops, keeping P in the kernels' context.
//     Through the seam a GPT step must then be the reference step bit for bit (gradients, loss)
//     and hold exactly the same bytes: the seam adds and drops nothing.
//   - "recompute": a float64 FlashAttention in loops, keeping o [B*H, T, d] and lse [B*H, T]
//     and rebuilding P from lse in backward. A step then holds, after the forward, exactly
//     L * 4(B*H*T^2 - B*T*D - B*H*T) bytes fewer than the reference (P gone, o and lse kept),
//     and its gradients equal the reference's to float32 rounding (bound below).
// Plus: kernels that decline run the reference path, a backward whose kernels were removed
// fails clearly, and so does a forward whose kernels return the wrong shape; checkpointed blocks
// recompute through the kernels, bit for bit.
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "bitwise_diff.h"
#include "gpt_test_util.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/attention_kernels.h"
#include "gtl/nn/causal_self_attention.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt.h"
#include "gtl/ops/causal_mask.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/softmax.h"
#include "gtl_test.h"

using namespace gtl;

namespace {

struct Shape5 {
  int64_t layers, heads, dim, t, batch, vocab;
};

std::string describe(const Shape5& s) {
  return "layers " + std::to_string(s.layers) + ", heads " + std::to_string(s.heads) + ", width " +
         std::to_string(s.dim) + ", T " + std::to_string(s.t) + ", B " + std::to_string(s.batch);
}

float scale_of(const Tensor& q) {
  return 1.f / std::sqrt(static_cast<float>(q.size(2)));
}

// The reference path's ops, P kept by the kernels.
std::shared_ptr<nn::AttentionKernels> reference_in_pieces() {
  auto k = std::make_shared<nn::AttentionKernels>();
  k->forward = [](const Tensor& q, const Tensor& kk, const Tensor& v, std::vector<Tensor>& saved) {
    Tensor s = ops::batched_matmul(q, kk, false, true, scale_of(q));
    ops::causal_mask_(s);
    Tensor p = ops::softmax(s);
    Tensor y = ops::batched_matmul(p, v);
    saved = {p};
    return y;
  };
  k->backward = [](const Tensor& q, const Tensor& kk, const Tensor& v,
                   const std::vector<Tensor>& saved, const Tensor& dy, const Tensor& dq,
                   const Tensor& dk, const Tensor& dv) {
    const Tensor& p = saved.at(0);
    Tensor dp = ops::batched_matmul(dy, v, false, true);
    ops::batched_matmul_out(p, dy, dv, true, false);
    Tensor ds = ops::softmax_backward(p, dp);
    ops::batched_matmul_out(ds, kk, dq, false, false, scale_of(q));
    ops::batched_matmul_out(ds, q, dk, true, false, scale_of(q));
  };
  return k;
}

// FlashAttention's arithmetic in float64 loops: o and lse kept, P rebuilt in backward.
std::shared_ptr<nn::AttentionKernels> recompute() {
  auto k = std::make_shared<nn::AttentionKernels>();
  k->forward = [](const Tensor& q, const Tensor& kk, const Tensor& v, std::vector<Tensor>& saved) {
    const int64_t bh = q.size(0), t = q.size(1), d = q.size(2);
    Tensor o = Tensor::empty(q.shape(), q.dtype(), q.device());
    Tensor lse = Tensor::empty({bh, t}, DType::Float32, q.device());
    const float *qp = q.data<float>(), *kp = kk.data<float>(), *vp = v.data<float>();
    float *op = o.data<float>(), *lp = lse.data<float>();
    const double scale = scale_of(q);
    std::vector<double> s(t), acc(d);
    for (int64_t r = 0; r < bh * t; ++r) {
      const int64_t head = r / t, i = r % t;
      double m = -std::numeric_limits<double>::infinity(), l = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += double(qp[r * d + c]) * kp[(head * t + j) * d + c];
        s[j] = dot * scale;
        m = std::max(m, s[j]);
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j <= i; ++j) {
        const double e = std::exp(s[j] - m);
        l += e;
        for (int64_t c = 0; c < d; ++c) acc[c] += e * vp[(head * t + j) * d + c];
      }
      for (int64_t c = 0; c < d; ++c) op[r * d + c] = static_cast<float>(acc[c] / l);
      lp[r] = static_cast<float>(m + std::log(l));
    }
    saved = {o, lse};
    return o;
  };
  k->backward = [](const Tensor& q, const Tensor& kk, const Tensor& v,
                   const std::vector<Tensor>& saved, const Tensor& dy, const Tensor& dq,
                   const Tensor& dk, const Tensor& dv) {
    const int64_t bh = q.size(0), t = q.size(1), d = q.size(2);
    const float *qp = q.data<float>(), *kp = kk.data<float>(), *vp = v.data<float>();
    const float *op = saved.at(0).data<float>(), *lp = saved.at(1).data<float>();
    const float* gp = dy.data<float>();
    const double scale = scale_of(q);
    std::vector<double> gq(bh * t * d, 0.0), gk(bh * t * d, 0.0), gv(bh * t * d, 0.0);
    for (int64_t r = 0; r < bh * t; ++r) {
      const int64_t head = r / t, i = r % t;
      double row = 0;  // dO_i . o_i, softmax's backward term
      for (int64_t c = 0; c < d; ++c) row += double(gp[r * d + c]) * op[r * d + c];
      for (int64_t j = 0; j <= i; ++j) {
        const int64_t key = head * t + j;
        double dot = 0, dpij = 0;
        for (int64_t c = 0; c < d; ++c) {
          dot += double(qp[r * d + c]) * kp[key * d + c];
          dpij += double(gp[r * d + c]) * vp[key * d + c];
        }
        const double p = std::exp(dot * scale - lp[r]);
        const double ds = p * (dpij - row) * scale;
        for (int64_t c = 0; c < d; ++c) {
          gv[key * d + c] += p * gp[r * d + c];
          gq[r * d + c] += ds * kp[key * d + c];
          gk[key * d + c] += ds * qp[r * d + c];
        }
      }
    }
    for (int64_t e = 0; e < bh * t * d; ++e) {
      dq.data<float>()[e] = static_cast<float>(gq[e]);
      dk.data<float>()[e] = static_cast<float>(gk[e]);
      dv.data<float>()[e] = static_cast<float>(gv[e]);
    }
  };
  return k;
}

struct Step {
  int64_t held_after_forward = 0;  // allocator bytes when the forward has returned
  float loss = 0.f;
  std::vector<std::vector<float>> grads;
};

Step run_step(const Shape5& s, std::shared_ptr<const nn::AttentionKernels> kernels,
              bool checkpoint = false) {
  std::shared_ptr<Allocator> alloc = make_cpu_caching_allocator();
  Step out;
  AllocatorScope scope(alloc);
  nn::GPTConfig c;
  c.vocab = s.vocab;
  c.context = s.t;
  c.dim = s.dim;
  c.layers = s.layers;
  c.heads = s.heads;
  c.seed = 11;
  c.checkpoint = checkpoint;
  nn::GPT gpt(c);
  EXPECT_EQ(nn::use_attention_kernels(gpt, kernels), s.layers)
      << "use_attention_kernels must set every block's attention";
  std::mt19937_64 rng(s.t * 131 + s.dim);
  std::vector<int64_t> ids, targets;
  for (int64_t i = 0; i < s.batch * s.t; ++i) {
    ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(s.vocab)));
    targets.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(s.vocab)));
  }
  const Tensor in = gtl::testing::ids_tensor(ids, {s.batch, s.t});
  const Tensor tg = gtl::testing::ids_tensor(targets, {s.batch * s.t});
  const nn::CrossEntropyLoss head;
  nn::Context ctx, loss_ctx;
  Tensor logits = gpt.forward(in, ctx);
  out.held_after_forward = alloc->stats().allocated_bytes;
  Tensor loss = head.forward(logits, tg, loss_ctx);
  gpt.backward(ctx, head.backward(loss_ctx), nn::GradMode::Overwrite);
  for (const nn::ParamRef& p : gpt.parameters()) out.grads.push_back(p.grad.to_vector());
  out.loss = loss.item();
  return out;
}

const std::vector<Shape5> kShapes = {
    {2, 2, 8, 5, 2, 11},   // two blocks, two heads of 4
    {1, 4, 8, 13, 3, 17},  // T prime, four heads of 2
    {3, 1, 4, 1, 2, 7},    // T = 1: one key per query
};

// The gradient of ||a - b|| <= kRel ||b|| per parameter tensor. Both paths compute the same
// function; the float64 kernels' own error is negligible, the reference's float32 path carries
// at most gamma_n = n u / (1 - n u) relative error per sum of n terms (u = 2^-24) through a few
// chained GEMMs of n <= 4D*B*T = 1664 terms here: 1664 * 6e-8 = 1e-4 per sum in the worst case
// (random signs give sqrt(n), about 2.4e-6). 1e-3 leaves the worst case room through the
// network's depth; a wrong mask, scale or row term is off by order 1.
constexpr double kRel = 1e-3;

void expect_error_containing(const std::function<void()>& fn, const std::string& expected) {
  try {
    fn();
    ADD_FAILURE() << "expected an Error containing \"" << expected << "\", none thrown";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(AttentionKernels, ReferenceInPiecesIsTheReferenceBitForBit) {
  for (const Shape5& s : kShapes) {
    const Step plain = run_step(s, nullptr), seam = run_step(s, reference_in_pieces());
    EXPECT_EQ(seam.held_after_forward, plain.held_after_forward)
        << describe(s) << ": the same tensors kept through the seam must cost the same bytes";
    EXPECT_EQ(gtl::testing::bitwise_diff({seam.loss}, {plain.loss}), "") << describe(s);
    ASSERT_EQ(seam.grads.size(), plain.grads.size());
    for (std::size_t i = 0; i < plain.grads.size(); ++i) {
      EXPECT_EQ(gtl::testing::bitwise_diff(seam.grads[i], plain.grads[i]), "")
          << describe(s) << ": parameter " << i;
    }
  }
}

TEST(AttentionKernels, RecomputingFromLseDropsTheScoresFromTheStep) {
  for (const Shape5& s : kShapes) {
    const Step plain = run_step(s, nullptr), seam = run_step(s, recompute());
    const int64_t n = s.batch * s.t, bh = s.batch * s.heads;
    const int64_t fewer = s.layers * 4 * (bh * s.t * s.t - n * s.dim - bh * s.t);
    EXPECT_EQ(plain.held_after_forward - seam.held_after_forward, fewer)
        << describe(s) << ": keeping o and lse instead of P must hold L * 4(B*H*T^2 - B*T*D - "
        << "B*H*T) bytes fewer after the forward";
    EXPECT_NEAR(seam.loss, plain.loss, kRel * std::abs(plain.loss)) << describe(s);
    for (std::size_t i = 0; i < plain.grads.size(); ++i) {
      double diff = 0, norm = 0;
      for (std::size_t e = 0; e < plain.grads[i].size(); ++e) {
        diff += std::pow(double(seam.grads[i][e]) - plain.grads[i][e], 2);
        norm += std::pow(double(plain.grads[i][e]), 2);
      }
      EXPECT_LE(std::sqrt(diff), kRel * std::sqrt(norm))
          << describe(s) << ": parameter " << i << "'s gradient through the recomputing kernels";
    }
  }
}

TEST(AttentionKernels, DecliningRunsTheReferencePath) {
  auto declines = std::make_shared<nn::AttentionKernels>();
  int calls = 0;
  declines->forward = [&calls](const Tensor&, const Tensor&, const Tensor&, std::vector<Tensor>&) {
    ++calls;
    return Tensor();
  };
  const Shape5 s = kShapes[0];
  const Step plain = run_step(s, nullptr), seam = run_step(s, declines);
  EXPECT_EQ(calls, s.layers);
  EXPECT_EQ(seam.held_after_forward, plain.held_after_forward);
  for (std::size_t i = 0; i < plain.grads.size(); ++i) {
    EXPECT_EQ(gtl::testing::bitwise_diff(seam.grads[i], plain.grads[i]), "") << "parameter " << i;
  }
}

TEST(AttentionKernels, MisuseFailsClearly) {
  Generator gen(3);
  nn::CausalSelfAttention layer(8, 2, gen);
  const Tensor x = Tensor::normal({2, 5, 8}, gen);
  {  // kernels removed between forward and backward
    layer.set_kernels(recompute());
    nn::Context ctx;
    const Tensor y = layer.forward(x, ctx);
    layer.set_kernels(nullptr);
    expect_error_containing([&] { layer.backward(ctx, Tensor::ones(y.shape())); },
                            "change them between steps");
  }
  {  // a wrong shape back
    auto wrong = std::make_shared<nn::AttentionKernels>();
    wrong->forward = [](const Tensor& q, const Tensor&, const Tensor&, std::vector<Tensor>&) {
      return Tensor::zeros({q.size(0), q.size(1), q.size(2) + 1});
    };
    layer.set_kernels(wrong);
    nn::Context ctx;
    expect_error_containing([&] { layer.forward(x, ctx); }, "the attention kernels returned");
  }
}

// Checkpointed blocks run the kernels' forward again inside their backward
// (activation_checkpoint.h): the gradients are those without checkpointing, bit for bit.
TEST(AttentionKernels, CheckpointedBlocksRecomputeThroughTheKernels) {
  for (const Shape5& s : kShapes) {
    const Step plain = run_step(s, recompute()), ckpt = run_step(s, recompute(), true);
    ASSERT_EQ(ckpt.grads.size(), plain.grads.size());
    for (std::size_t i = 0; i < plain.grads.size(); ++i) {
      EXPECT_EQ(gtl::testing::bitwise_diff(ckpt.grads[i], plain.grads[i]), "")
          << describe(s) << ": parameter " << i;
    }
  }
}
