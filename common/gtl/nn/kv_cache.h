// KVCache: the keys and values of every attention layer for the tokens decoded so far.
//
//   nn::KVCache cache(layers, batch, heads, head_dim, max_len, DType::Float32, device);
//   Tensor logits = gpt.forward_cached(prompt, cache);     // fills positions 0..P-1
//   logits = gpt.forward_cached(next_token, cache);        // one position more, O(T) work
//
// Why: without it, decoding token t recomputes the keys and values of all t earlier tokens in
// every layer (O(T^2) per token). Keys and values of earlier positions never change (causal
// attention: a position only sees the past), so each layer keeps them and a new token computes
// only its own q, k, v and attends to the cached ones.
//
// Memory, allocated once up front (it is the whole point of the allocator test in
// common/tests/nn/gpt_kv_cache_test.cpp):
//   bytes = 2 (k and v) x layers x heads x head_dim x max_len x batch x dtype size
// Layout per layer: [max_len, batch * heads, head_dim], so appending positions is a copy into a
// first-dimension slice (a view, tensor.h); attention reads positions [0, length) and permutes
// them to [batch * heads, length, head_dim] for its batched GEMMs (a temporary per step).
//
// Equality: on the CPU, under ops::ScopedRowInvariant (math_mode.h), decoding with the cache
// gives the logits of a full forward over the same tokens bit for bit (gpt_kv_cache_test.cpp).
// Attention's part is row-independent (ops/matmul.h's batched loop; the masked keys a full
// forward sees contribute exact zeros); the Linear layers' GEMMs are too in that mode. Without
// it, OpenBLAS blocks a GEMM by its row count, and a row decoded alone can differ in the last bit
// from the same row among all positions.
#pragma once

#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::nn {

class KVCache {
 public:
  KVCache(int64_t layers, int64_t batch, int64_t heads, int64_t head_dim, int64_t max_len,
          DType dtype = DType::Float32, Device device = Device::cpu());

  // Layer l's keys and values: [max_len, batch * heads, head_dim].
  const Tensor& keys(int64_t layer) const { return k_.at(static_cast<std::size_t>(layer)); }
  const Tensor& values(int64_t layer) const { return v_.at(static_cast<std::size_t>(layer)); }

  int64_t length() const { return length_; }  // positions filled (the next one's index)
  int64_t max_len() const { return max_len_; }
  int64_t batch() const { return batch_; }
  DType dtype() const { return dtype_; }
  // 2 x layers x heads x head_dim x max_len x batch x dtype size.
  int64_t bytes() const;

  // Called by the model once all its layers have appended `new_positions` positions.
  void advance(int64_t new_positions);
  void clear() { length_ = 0; }

 private:
  std::vector<Tensor> k_, v_;
  int64_t batch_, heads_, head_dim_, max_len_;
  DType dtype_;
  int64_t length_ = 0;
};

}  // namespace gtl::nn
