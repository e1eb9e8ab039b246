// CausalSelfAttention: multi-head self-attention in which position t sees positions <= t only.
//
//   x [B, T, D] -> qkv = x Wqkv^T + b         one fused Linear D -> 3D (child "qkv")
//              -> q, k, v [B*H, T, d]         split into H heads of d = D / H (one permute)
//              -> S = q k^T / sqrt(d)         [B*H, T, T]  batched GEMM (ops/matmul.h)
//              -> S[i, j > i] = -inf          ops/causal_mask.h
//              -> P = softmax(S)              ops/softmax.h, row by row
//              -> Y = P v                     [B*H, T, d]  batched GEMM
//              -> merge heads, y = Y Wo^T + bo  one permute, Linear D -> D (child "proj")
// This is the reference path: it materialises the T x T matrices, so its memory grows with T^2
// (FlashAttention's whole point is to avoid exactly that; this course keeps the matrices visible).
//
// Saved tensors (what backward reads), with c the compute dtype's size (precision.h):
//   child qkv:  its input x                   B*T*D      elements (the LayerNorm's output)
//   this layer: q, k, v in one tensor         3*B*T*D    ([3, B, H, T, d]: one allocation)
//               P = softmax(S)                B*H*T*T    (backward needs P for dV = P^T dY and
//                                                         for softmax's backward; S is not kept)
//   child proj: the merged heads              B*T*D
//   total       (5*B*T*D + B*H*T^2) * c bytes, each an allocation of its own that the
//               allocator counts exactly (common/tests/nn/gpt_memory_test.cpp).
// The 1/sqrt(d) scale rides on the GEMM's alpha (no extra pass), and backward multiplies dQ and
// dK by it the same way. Masked positions have P = 0 exactly, so their gradients are exactly 0.
//
// Precision: the GEMMs run in the compute dtype with float32 accumulation; softmax computes in
// float32 and rounds P once to the compute dtype. Input and output: [B, T, D]; the output in the
// compute dtype (the block adds it to the float32 residual stream).
//
// Kernels (attention_kernels.h): set_kernels / use_attention_kernels hand the attention core of
// the training path (S, mask, P, Y and their backward) to a kernel library, FlashAttention for
// one; the layer then saves q, k, v and whatever the kernels keep instead of P. The costs below
// stay the reference path's.
//
// forward_cached(x, cache, layer) is the decoding path (kv_cache.h): x holds only the new
// positions, their k and v are appended to the cache, and their q attends to every cached key.
//
// Tensor parallelism (tensor_parallel.h): a rank of a TP group of k runs H/k of the heads, built
// from its shards of qkv (column-parallel: D -> 3D/k) and proj (row-parallel: D/k -> D). The
// heads' code is the same; the two layers' all-reduces are the only communication, and every
// tensor above with a D in it is the rank's D/k, except qkv's input (whole). Under sequence
// parallelism (parallel_linear.h) its input and output are the rank's N/k tokens, [B, T/k, D]
// (the N/k rows of the flattened stream, whichever positions they are); qkv gathers the whole
// sequence, proj scatters it back, and the heads see all T positions as without SP.
#pragma once

#include <memory>

#include "gtl/nn/attention_kernels.h"
#include "gtl/nn/kv_cache.h"
#include "gtl/nn/module.h"

namespace gtl::nn {

class CausalSelfAttention final : public Module {
 public:
  CausalSelfAttention(int64_t dim, int64_t heads, Generator& gen);
  // `heads` heads of head_dim each, from given layers: qkv [N, dim] -> [N, 3 heads head_dim]
  // (q, k, v, each heads in order), proj [N, heads head_dim] -> [N, dim]. Its children "qkv" and
  // "proj"; the tensor-parallel shard of a whole layer (tensor_parallel.h).
  // `sequence_parallel` k > 1: the input holds N/k of the tokens (qkv gathers, proj scatters).
  CausalSelfAttention(int64_t dim, int64_t heads, int64_t head_dim, std::unique_ptr<Module> qkv,
                      std::unique_ptr<Module> proj, int64_t sequence_parallel = 1);

  int64_t dim() const { return dim_; }
  int64_t heads() const { return heads_; }  // the heads this layer runs
  int64_t head_dim() const { return head_dim_; }
  int64_t width() const { return heads_ * head_dim_; }  // dim, or dim/k for a TP shard

  // The kernels of the training path's attention core (nullptr, the default: the reference path).
  void set_kernels(std::shared_ptr<const AttentionKernels> kernels) {
    kernels_ = std::move(kernels);
  }
  const std::shared_ptr<const AttentionKernels>& kernels() const { return kernels_; }

  // New positions x [B, t, D] after cache.length() cached ones; appends their k, v to layer
  // `layer` of the cache (the caller advances it once every layer has). No gradient kept.
  Tensor forward_cached(const Tensor& x, KVCache& cache, int64_t layer);

  // Its own work (the qkv and proj Linears report theirs), input [B, T, D], H heads, d = D/H:
  //   forward:  flops 2*B*H*T*T*d (S = q k^T) + 2*B*H*T*T*d (Y = P v) = 4*B*T^2*D, plus
  //             softmax 5 and the mask 1 per score (6*B*H*T^2; max, subtract, exp, sum, scale);
  //             bytes (c = compute dtype size): the two permutes read+write 3BTD and BTD each,
  //             the GEMMs read q,k (2BTD), write S (BHT^2), read P,v (BHT^2 + BTD), write Y (BTD),
  //             mask and softmax read+write S (4 BHT^2)
  //   backward: flops 8*B*T^2*D (dP = dY v^T, dV = P^T dY, dQ = dS k, dK = dS^T q: twice the
  //             forward's GEMMs) + softmax backward 4 per score (4*B*H*T^2)
  //             bytes: the permutes (2*(BTD + 3BTD)), the four GEMMs read 2 operands and write 1
  //             each (dP: BTD+BTD+BHT^2, dV: BHT^2+BTD+BTD, dQ: BHT^2+BTD+BTD,
  //             dK: BHT^2+BTD+BTD), softmax backward reads P and dP, writes dS (3 BHT^2)
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  Module& qkv() const { return *children_[0]; }
  Module& proj() const { return *children_[1]; }
  // [B*H, t, d] x [B*H, Tk, d] keys and values -> merged heads [B*t, D]: scores, mask, softmax,
  // weighted sum. Returns P through `probs` when asked.
  Tensor attend(const Tensor& q, const Tensor& k, const Tensor& v, int64_t batch, int64_t t,
                Tensor* probs) const;
  // Y [B*H, t, d] -> merged heads [B*t, D].
  Tensor merge_heads(const Tensor& y, int64_t batch, int64_t t) const;

  int64_t dim_, heads_, head_dim_;
  int64_t sequence_parallel_ = 1;  // the input holds 1/sequence_parallel_ of the positions
  std::shared_ptr<const AttentionKernels> kernels_;
};

}  // namespace gtl::nn
