// TODO 2: attention split by heads. Your shard_attention runs inside the lab's ParallelAttention
// (src/parallel_attention.cpp, whose two all-reduces are written inline), against the core's
// unsharded CausalSelfAttention on k = 1, 2, 4 in-process ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gtl/ops/causal_mask.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/permute.h"
#include "gtl/ops/softmax.h"
#include "gtl_judge_output.h"
#include "lab08_cases.h"
#include "lab08_student_call.h"
#include "lab08_test_util.h"
#include "tensor_parallel.h"

namespace {

using namespace lab08;
using namespace lab08::testing;
using lab08_cases::Case;

struct AttentionRank {
  std::vector<float> y, dx;
  std::vector<Tensor> grads;  // qkv.weight, qkv.bias, proj.weight, proj.bias
};

std::vector<AttentionRank> run_attention(const Case& c, int k) {
  auto full = lab08_cases::make_attention(c.seed, lab08_cases::kDim, lab08_cases::kHeads);
  const auto [x, dy] = lab08_cases::attention_data(c);
  std::vector<AttentionRank> ranks(static_cast<std::size_t>(k));
  run_tp(k, [&](Communicator& comm) {
    const auto call = lab08_student_call::todo2();
    ParallelAttention attn(*full, comm);
    AttentionRank& r = ranks[static_cast<std::size_t>(comm.rank())];
    nn::Context ctx;
    r.y = attn.forward(x, ctx).to_vector();
    r.dx = attn.backward(ctx, dy).to_vector();
    for (const auto& p : attn.parameters()) r.grads.push_back(p.grad);
  });
  return ranks;
}

// The largest |v| the unsharded qkv produces: every merged head output is a convex combination
// of v rows, so |merged| <= max |v| bounds the proj product's terms.
double max_abs_v(const nn::CausalSelfAttention& full, const Tensor& x) {
  nn::Context ctx;
  Tensor qkv = full.children()[0]->forward(x.reshape({x.size(0) * x.size(1), x.size(2)}), ctx);
  const std::vector<float> v = qkv.to_vector();
  const int64_t width = 3 * full.dim();
  double m = 0;
  for (std::size_t i = 0; i < v.size(); ++i)
    if (int64_t(i) % width >= 2 * full.dim()) m = std::max(m, std::fabs(double(v[i])));
  return m;
}

// The gradient of the unsharded qkv output, dqkv [B*T, 3D], with the core's ops (the reference
// path of causal_self_attention.cpp): dx = dqkv Wqkv adds 3D terms, which TP cuts into k partial
// sums, so its bound is contraction_bound(dqkv, Wqkv).
Tensor reference_dqkv(const nn::CausalSelfAttention& full, const Tensor& x, const Tensor& dy) {
  namespace ops = gtl::ops;
  const int64_t b = x.size(0), t = x.size(1), h = full.heads(), d = full.head_dim();
  const int64_t dim = full.dim();
  const std::vector<int64_t> split = {2, 0, 3, 1, 4}, swap = {0, 2, 1, 3};
  const auto p = full.parameters();
  nn::Context ctx;
  Tensor qkv = full.children()[0]->forward(x.reshape({b * t, dim}), ctx);
  Tensor heads = ops::permute(qkv.reshape({b, t, 3, h, d}), split);
  auto part = [&](int64_t i) { return heads.select(i).reshape({b * h, t, d}); };
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  Tensor s = ops::batched_matmul(part(0), part(1), false, true, scale);
  ops::causal_mask_(s);
  Tensor probs = ops::softmax(s);
  Tensor dmerged = ops::matmul(dy.reshape({b * t, dim}), p[2].value);
  Tensor dyh = ops::permute(dmerged.reshape({b, t, h, d}), swap).reshape({b * h, t, d});
  Tensor dheads = Tensor::empty({3, b * h, t, d});
  Tensor ds = ops::softmax_backward(probs, ops::batched_matmul(dyh, part(2), false, true));
  ops::batched_matmul_out(probs, dyh, dheads.select(2), true, false);
  ops::batched_matmul_out(ds, part(1), dheads.select(0), false, false, scale);
  ops::batched_matmul_out(ds, part(0), dheads.select(1), true, false, scale);
  return ops::permute(dheads.reshape({3, b, h, t, d}), ops::inverse_permutation(split))
      .reshape({b * t, 3 * dim});
}

void expect_attention_equals_unsharded(const Case& c, const std::string& test) {
  gtl::ops::ScopedRowInvariant row_invariant(true);
  auto full = lab08_cases::make_attention(c.seed, lab08_cases::kDim, lab08_cases::kHeads);
  const auto [x, dy] = lab08_cases::attention_data(c);
  nn::Context ctx;
  const std::vector<float> y_ref = full->forward(x, ctx).to_vector();
  const std::vector<float> dx_ref = full->backward(ctx, dy).to_vector();
  const auto p = full->parameters();
  // The proj product adds D terms |merged| |Wo| <= max|v| |Wo| in another order.
  const double vmax = max_abs_v(*full, x);
  std::vector<double> y_bound(y_ref.size());
  for (std::size_t i = 0; i < y_ref.size(); ++i) {
    const int64_t o = int64_t(i) % lab08_cases::kDim;
    double s = std::fabs(double(p[3].value.data<float>()[o]));
    for (int64_t j = 0; j < lab08_cases::kDim; ++j)
      s += vmax * std::fabs(double(p[2].value.data<float>()[o * lab08_cases::kDim + j]));
    y_bound[i] = 2.0 * double(lab08_cases::kDim + 2) * lab08_cases::kU * s;
  }
  const auto dx_bound =
      lab08_cases::contraction_bound(reference_dqkv(*full, x, dy), p[0].value, Tensor(), true);
  // The reference gradients as an attention layer of their own: your shard of it is what each
  // rank's gradients must be (the same cut as the weights, bit for bit).
  auto grads = lab08_cases::make_attention(0, lab08_cases::kDim, lab08_cases::kHeads);
  const auto g = grads->parameters();
  for (std::size_t i = 0; i < g.size(); ++i) Tensor(g[i].value).copy_(p[i].grad);
  gtl::judge::Outputs out(test);
  for (int k : lab08_cases::kTpSizes) {
    const std::string at = "TP = " + std::to_string(k) + ", " + c.str();
    const std::vector<AttentionRank> ranks = run_attention(c, k);
    out.record_all(ranks[0].y);
    for (int r = 0; r < k; ++r) {
      const AttentionRank& got = ranks[static_cast<std::size_t>(r)];
      const std::string who = at + ", rank " + std::to_string(r);
      if (k == 1) {
        EXPECT_EQ(bitwise_problem(got.y, y_ref, "the attention's output, " + who,
                                  "the shard of one rank: all heads, the weights as they are"),
                  "");
        EXPECT_EQ(
            bitwise_problem(got.dx, dx_ref, "the attention's dx, " + who, "the shard of one rank"),
            "");
      } else {
        EXPECT_EQ(bounded_problem(got.y, y_ref, y_bound, "the attention's output, " + who,
                                  "the head slice: which rows of the fused qkv weight hold this "
                                  "rank's heads' q, k and v, and which proj columns read them"),
                  "");
        EXPECT_EQ(bounded_problem(got.dx, dx_ref, dx_bound, "the attention's dx, " + who,
                                  "the head slice of the qkv weight (its rows) and of its bias"),
                  "");
      }
      const AttentionShard want = shard_attention(*grads, r, k);
      EXPECT_EQ(bitwise_problem(got.grads[0].to_vector(), want.qkv_weight.to_vector(),
                                "qkv's weight gradient, " + who, "the head slice of qkv"),
                "");
      EXPECT_EQ(bitwise_problem(got.grads[1].to_vector(), want.qkv_bias.to_vector(),
                                "qkv's bias gradient, " + who, "the head slice of qkv's bias"),
                "");
      EXPECT_EQ(bitwise_problem(got.grads[2].to_vector(), want.proj_weight.to_vector(),
                                "proj's weight gradient, " + who, "the proj columns"),
                "");
      EXPECT_EQ(bitwise_problem(got.grads[3].to_vector(), p[3].grad.to_vector(),
                                "proj's bias gradient, " + who, "(the harness's bias)"),
                "");
    }
  }
}

TEST(ParallelAttention, EqualsTheUnshardedAttentionAtAFixedShape) {
  expect_attention_equals_unsharded(Case{2, 6, 5},
                                    "ParallelAttention.EqualsTheUnshardedAttentionAtAFixedShape");
}

TEST(ParallelAttention, EqualsTheUnshardedAttentionAtSeededShapes) {
  const std::string test = "ParallelAttention.EqualsTheUnshardedAttentionAtSeededShapes";
  expect_attention_equals_unsharded(lab08_cases::seeded_case(test), test);
}

// Each rank's shard has the shapes of its heads, and every weight of the full layer lands in
// exactly one rank's shard (qkv) or column block (proj): the shards of all ranks together hold
// the full layer's weights, each once.
TEST(ParallelAttention, ShardsPartitionTheFullWeights) {
  auto full = lab08_cases::make_attention(9, lab08_cases::kDim, lab08_cases::kHeads);
  const auto p = full->parameters();
  for (int k : lab08_cases::kTpSizes) {
    std::vector<float> qkv, proj;
    for (int r = 0; r < k; ++r) {
      const AttentionShard s = shard_attention(*full, r, k);
      ASSERT_EQ(s.heads, lab08_cases::kHeads / k) << "TP = " << k << ": heads per rank";
      ASSERT_EQ(s.qkv_weight.shape(), gtl::Shape({3 * lab08_cases::kDim / k, lab08_cases::kDim}));
      ASSERT_EQ(s.proj_weight.shape(), gtl::Shape({lab08_cases::kDim, lab08_cases::kDim / k}));
      for (float v : s.qkv_weight.to_vector()) qkv.push_back(v);
      for (float v : s.proj_weight.to_vector()) proj.push_back(v);
    }
    std::vector<float> want_qkv = p[0].value.to_vector(), want_proj = p[2].value.to_vector();
    std::sort(qkv.begin(), qkv.end()), std::sort(want_qkv.begin(), want_qkv.end());
    std::sort(proj.begin(), proj.end()), std::sort(want_proj.begin(), want_proj.end());
    EXPECT_EQ(
        bitwise_problem(qkv, want_qkv,
                        "TP = " + std::to_string(k) + ": the qkv weights of all shards (sorted)",
                        "the qkv rows: each exactly once over the ranks"),
        "");
    EXPECT_EQ(
        bitwise_problem(proj, want_proj,
                        "TP = " + std::to_string(k) + ": the proj weights of all shards (sorted)",
                        "the proj columns: each exactly once over the ranks"),
        "");
  }
}

TEST(ParallelAttention, HeadsNotDivisibleByTheTpSizeAreRefused) {
  gtl::judge::Outputs out("ParallelAttention.HeadsNotDivisibleByTheTpSizeAreRefused");
  auto full = lab08_cases::make_attention(3, 24, 6);  // 6 heads of 4
  std::string message;
  try {
    shard_attention(*full, 0, 4);
  } catch (const gtl::Error& e) {
    message = e.what();
  }
  out.record(!message.empty());
  EXPECT_TRUE(message.find('6') != std::string::npos && message.find('4') != std::string::npos &&
              message.find("not implemented") == std::string::npos)
      << "6 heads on 4 tensor-parallel ranks: expected a gtl::Error naming 6 and 4, got \""
      << message << "\". Revisit the refusal: a head is never cut across ranks";
  EXPECT_NO_THROW(shard_attention(*full, 1, 3)) << "6 heads on 3 ranks: 2 heads each";
  EXPECT_THROW(shard_attention(*full, 3, 3), gtl::Error) << "rank 3 of 3 does not exist";
}

}  // namespace
