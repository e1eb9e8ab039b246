// Causal self-attention, the reference path: batched GEMMs, mask, softmax (see
// causal_self_attention.h).
#include "gtl/nn/causal_self_attention.h"

#include <cmath>

#include "gtl/nn/linear.h"
#include "gtl/nn/precision.h"
#include "gtl/ops/causal_mask.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/permute.h"
#include "gtl/ops/softmax.h"

namespace gtl::nn {

namespace {
// qkv [B, T, 3, H, d] -> [3, B, H, T, d]: q, k, v each a contiguous [B*H, T, d] slice.
const std::vector<int64_t> kSplitHeads = {2, 0, 3, 1, 4};
// [B, H, T, d] <-> [B, T, H, d]: heads merged into rows of D (its own inverse).
const std::vector<int64_t> kSwapHeadsAndTime = {0, 2, 1, 3};
}  // namespace

CausalSelfAttention::CausalSelfAttention(int64_t dim, int64_t heads, Generator& gen)
    : Module("causal_self_attention"),
      dim_(dim),
      heads_(heads),
      head_dim_(heads > 0 ? dim / heads : 0) {
  GTL_CHECK(
      dim > 0 && heads > 0 && dim % heads == 0,
      "CausalSelfAttention: dim " << dim << " must be a positive multiple of heads " << heads);
  add_child("qkv", std::make_unique<Linear>(dim, 3 * dim, gen));
  add_child("proj", std::make_unique<Linear>(dim, dim, gen));
}

CausalSelfAttention::CausalSelfAttention(int64_t dim, int64_t heads, int64_t head_dim,
                                         std::unique_ptr<Module> qkv, std::unique_ptr<Module> proj,
                                         int64_t sequence_parallel)
    : Module("causal_self_attention"),
      dim_(dim),
      heads_(heads),
      head_dim_(head_dim),
      sequence_parallel_(sequence_parallel) {
  GTL_CHECK(dim > 0 && heads > 0 && head_dim > 0 && sequence_parallel > 0,
            "CausalSelfAttention: expected positive dim, heads, head_dim and sequence_parallel, "
            "got "
                << dim << ", " << heads << ", " << head_dim << ", " << sequence_parallel);
  add_child("qkv", std::move(qkv));
  add_child("proj", std::move(proj));
}

Tensor CausalSelfAttention::attend(const Tensor& q, const Tensor& k, const Tensor& v, int64_t batch,
                                   int64_t t, Tensor* probs) const {
  const float scale = 1.f / std::sqrt(static_cast<float>(head_dim()));
  Tensor s = ops::batched_matmul(q, k, false, true, scale);  // [B*H, t, Tk]
  ops::causal_mask_(s);
  Tensor p = ops::softmax(s);
  Tensor y = ops::batched_matmul(p, v);  // [B*H, t, d]
  if (probs != nullptr) *probs = p;
  return merge_heads(y, batch, t);
}

Tensor CausalSelfAttention::merge_heads(const Tensor& y, int64_t batch, int64_t t) const {
  return ops::permute(y.reshape({batch, heads_, t, head_dim()}), kSwapHeadsAndTime)
      .reshape({batch * t, width()});
}

// With kernels (attention_kernels.h) that accept the call, ctx.children[2] holds what they
// saved and ctx.saved the heads only; otherwise ctx.saved = {heads, P} (the reference path).
Tensor CausalSelfAttention::forward_impl(const Tensor& x, Context& ctx) {
  GTL_CHECK(x.dim() == 3 && x.size(2) == dim_, "CausalSelfAttention '"
                                                   << path() << "': expected [B, T, " << dim_
                                                   << "], got " << shape_str(x.shape()));
  // Under SP the input is this rank's N/k tokens; qkv's output has all T positions.
  const int64_t b = x.size(0), rows = x.size(1), t = rows * sequence_parallel_, h = heads_,
                d = head_dim();
  ctx.children.resize(2);
  Tensor qkv_out = qkv().forward(x.reshape({b * rows, dim_}), ctx.children[0]);  // [B*T, 3D]
  Tensor heads = ops::permute(qkv_out.reshape({b, t, 3, h, d}), kSplitHeads);
  auto part = [&](int64_t i) { return heads.select(i).reshape({b * h, t, d}); };
  Tensor merged;
  if (kernels_ != nullptr && kernels_->forward) {
    Context kept;
    Tensor y = kernels_->forward(part(0), part(1), part(2), kept.saved);
    if (y.defined()) {
      GTL_CHECK(y.shape() == Shape({b * h, t, d}) && y.dtype() == heads.dtype() &&
                    y.device() == heads.device(),
                "CausalSelfAttention '" << path() << "': the attention kernels returned "
                                        << shape_str(y.shape()) << " " << dtype_name(y.dtype())
                                        << ", expected [" << b * h << ", " << t << ", " << d << "] "
                                        << dtype_name(heads.dtype()) << " on the input's device");
      merged = merge_heads(y, b, t);
      ctx.children.push_back(std::move(kept));
      ctx.saved = {heads};
    } else {
      GTL_CHECK(kept.saved.empty(), "CausalSelfAttention '"
                                        << path() << "': the attention kernels declined the call "
                                        << "but saved " << kept.saved.size() << " tensors");
    }
  }
  if (!merged.defined()) {
    Tensor p;
    merged = attend(part(0), part(1), part(2), b, t, &p);
    ctx.saved = {heads, p};
  }
  Tensor y = proj().forward(merged, ctx.children[1]);
  return y.reshape({b, rows, dim_});
}

Tensor CausalSelfAttention::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  const int64_t b = ctx.input_shape[0], rows = ctx.input_shape[1], t = rows * sequence_parallel_,
                h = heads_, d = head_dim();
  const Tensor& heads = ctx.saved.at(0);
  auto part = [&](int64_t i) { return heads.select(i).reshape({b * h, t, d}); };
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  const bool by_kernels = ctx.children.size() == 3;
  GTL_CHECK(!by_kernels || (kernels_ != nullptr && kernels_->backward),
            "CausalSelfAttention '" << path() << "': its forward ran attention kernels that are "
                                    << "gone (or have no backward): change them between steps");

  Tensor dmerged = proj().backward(ctx.children[1], dy.reshape({b * rows, dim_}), mode);
  Tensor dyh =
      ops::permute(cast_to(dmerged, heads.dtype()).reshape({b, t, h, d}), kSwapHeadsAndTime)
          .reshape({b * h, t, d});
  Tensor dheads = Tensor::empty({3, b * h, t, d}, heads.dtype(), heads.device());
  Tensor dp, ds;  // the reference path's: held through qkv's backward (docs/core.md's peak)
  if (by_kernels) {
    kernels_->backward(part(0), part(1), part(2), ctx.children[2].saved, dyh, dheads.select(0),
                       dheads.select(1), dheads.select(2));
  } else {
    const Tensor& p = ctx.saved.at(1);
    dp = ops::batched_matmul(dyh, part(2), false, true);                          // dP = dY v^T
    ops::batched_matmul_out(p, dyh, dheads.select(2), true, false);               // dV = P^T dY
    ds = ops::softmax_backward(p, dp);                                            // masked: 0
    ops::batched_matmul_out(ds, part(1), dheads.select(0), false, false, scale);  // dQ = dS k
    ops::batched_matmul_out(ds, part(0), dheads.select(1), true, false, scale);   // dK = dS^T q
  }
  Tensor dqkv = ops::permute(dheads.reshape({3, b, h, t, d}), ops::inverse_permutation(kSplitHeads))
                    .reshape({b * t, 3 * width()});
  return qkv().backward(ctx.children[0], dqkv, mode).reshape({b, rows, dim_});
}

Tensor CausalSelfAttention::forward_cached(const Tensor& x, KVCache& cache, int64_t layer) {
  GTL_CHECK(x.dim() == 3 && x.size(2) == dim_ && x.size(0) == cache.batch(),
            "CausalSelfAttention::forward_cached: expected [" << cache.batch() << ", t, " << dim_
                                                              << "], got " << shape_str(x.shape()));
  const int64_t b = x.size(0), t = x.size(1), h = heads_, d = head_dim();
  const int64_t start = cache.length(), end = start + t;
  GTL_CHECK(end <= cache.max_len(),
            "CausalSelfAttention::forward_cached: " << end << " positions exceed the cache's "
                                                    << cache.max_len());
  Context scratch;  // no backward follows
  Tensor qkv_out = qkv().forward(x.reshape({b * t, dim_}), scratch);
  GTL_CHECK(qkv_out.dtype() == cache.dtype(), "CausalSelfAttention::forward_cached: the cache "
                                                  << "holds " << dtype_name(cache.dtype())
                                                  << ", the layer computes in "
                                                  << dtype_name(qkv_out.dtype()));
  Tensor split = qkv_out.reshape({b, t, 3, h, d});
  Tensor q = ops::permute(split, kSplitHeads).select(0).reshape({b * h, t, d});
  // The new keys and values as [3, t, B*H, d], appended to the cache's [max_len, B*H, d] rows.
  Tensor kv_new = ops::permute(split, {2, 1, 0, 3, 4}).reshape({3, t, b * h, d});
  cache.keys(layer).slice(start, end).copy_(kv_new.select(1));
  cache.values(layer).slice(start, end).copy_(kv_new.select(2));
  Tensor k = ops::permute(cache.keys(layer).slice(0, end), {1, 0, 2});  // [B*H, end, d]
  Tensor v = ops::permute(cache.values(layer).slice(0, end), {1, 0, 2});
  Tensor merged = attend(q, k, v, b, t, nullptr);
  Context scratch_proj;
  return proj().forward(merged, scratch_proj).reshape({b, t, dim_});
}

ComputeCost CausalSelfAttention::forward_cost(const Shape& input_shape) const {
  const double b = static_cast<double>(input_shape.at(0)),
               t = static_cast<double>(input_shape.at(1) * sequence_parallel_);
  const double dd = static_cast<double>(width()), h = static_cast<double>(heads_);
  const double c = static_cast<double>(dtype_size(current_precision().compute));
  const double btd = b * t * dd, scores = b * h * t * t;
  const double flops = 4 * b * t * t * dd + 6 * scores;
  const double permutes = 2 * 3 * btd + 2 * btd;
  const double gemms = (2 * btd + scores) + (scores + btd + btd);
  const double mask_softmax = 4 * scores;
  return {flops, (permutes + gemms + mask_softmax) * c};
}

ComputeCost CausalSelfAttention::backward_cost(const Shape& input_shape) const {
  const double b = static_cast<double>(input_shape.at(0)),
               t = static_cast<double>(input_shape.at(1) * sequence_parallel_);
  const double dd = static_cast<double>(width()), h = static_cast<double>(heads_);
  const double c = static_cast<double>(dtype_size(current_precision().compute));
  const double btd = b * t * dd, scores = b * h * t * t;
  const double flops = 8 * b * t * t * dd + 4 * scores;
  const double permutes = 2 * (btd + 3 * btd);
  const double gemms = (2 * btd + scores) + 3 * (scores + 2 * btd);
  const double softmax = 3 * scores;
  return {flops, (permutes + gemms + softmax) * c};
}

}  // namespace gtl::nn
