// PositionEmbedding: x [B, T, D] -> x + P[start : start + T], a learned table P [context, D]
// (GPT-2's wpe), one row per position.
//
// Saves nothing: y = x + P is linear in both, so dx = dy and dP[t] = sum over the batch of
// dy[:, t]. That sum is ops::sum_rows (a fixed-order column sum, deterministic on both backends)
// of dy seen as [B, T*D]; rows of P past T get gradient 0. Positions past `context` are an error:
// the model has never learned them (a GPT's context length is this table's length).
//
// forward() adds positions 0..T-1 (training); add_positions(x, start) adds start..start+T-1
// without a context, for decoding with a KV cache (kv_cache.h), where the new tokens sit after
// the cached ones.
#pragma once

#include "gtl/nn/module.h"

namespace gtl::nn {

class PositionEmbedding final : public Module {
 public:
  // Table normal(0, 0.02), drawn from `gen` on the CPU.
  PositionEmbedding(int64_t context, int64_t dim, Generator& gen);

  int64_t context() const { return context_; }
  const ParamRef& weight() const { return params_[0]; }

  // x + P[start : start + T] for x [B, T, D] (float32), no gradient kept.
  Tensor add_positions(const Tensor& x, int64_t start) const;

  // Input [B, T, D], N = B*T*D elements:
  //   forward:  flops N (the add); bytes x read, y written (N floats each) + T*D table read
  //   backward: flops N (the batch sum); bytes dy read (N) + T*D written, all float32
  //             (dx = dy is the same tensor: no copy)
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  int64_t context_, dim_;
};

}  // namespace gtl::nn
