// AttentionKernels: a seam in CausalSelfAttention (causal_self_attention.h). The layer's
// training path splits heads, runs the attention core (scores, causal mask, softmax, weighted
// sum) and merges heads; the seam lets a kernel library run that core, forward and backward,
// instead of the reference path, which keeps the B*H*T*T probabilities for backward. Lab 10
// plugs its FlashAttention in here: what it keeps instead, and so what a training step holds,
// is the kernels' decision.
//
//   auto kernels = std::make_shared<nn::AttentionKernels>();
//   kernels->forward = ...; kernels->backward = ...;
//   nn::use_attention_kernels(gpt, kernels);   // every CausalSelfAttention in the model
//
// The layer keeps q, k, v (its saved heads) and the children's inputs as always; the kernels
// keep what they put into `saved`, which the layer holds in a Context of their own (the layer's
// third child context) until its backward has run. Their tensors come from the allocator like
// every other (Tensor::empty on the device of q), so its statistics count them exactly.
// The decoding path (forward_cached) always runs the reference path: it keeps nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gtl/nn/module.h"
#include "gtl/tensor/tensor.h"

namespace gtl::nn {

struct AttentionKernels {
  // q, k, v: [B*H, T, d], each contiguous, in the compute dtype, on the layer's device; query i
  // sees keys j <= i, scaled by 1/sqrt(d). Returns the heads' outputs Y [B*H, T, d] (contiguous,
  // same dtype and device) and appends to `saved` what backward needs besides q, k and v.
  // Returning an undefined Tensor declines the call (with `saved` left empty): the layer runs
  // its reference path instead, for this forward and its backward.
  std::function<Tensor(const Tensor& q, const Tensor& k, const Tensor& v,
                       std::vector<Tensor>& saved)>
      forward;
  // For a forward this object ran: dy [B*H, T, d] contiguous -> dq, dk, dv, each [B*H, T, d],
  // contiguous and allocated by the layer, overwritten (their contents on entry are undefined).
  std::function<void(const Tensor& q, const Tensor& k, const Tensor& v,
                     const std::vector<Tensor>& saved, const Tensor& dy, const Tensor& dq,
                     const Tensor& dk, const Tensor& dv)>
      backward;
};

// Sets `kernels` on every CausalSelfAttention in `model` (nullptr: the reference path again) and
// returns how many layers it set. Change them between steps only: a layer's backward runs the
// kernels its forward ran, and fails with a clear error when they were removed in between.
int64_t use_attention_kernels(Module& model, std::shared_ptr<const AttentionKernels> kernels);

}  // namespace gtl::nn
