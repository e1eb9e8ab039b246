// TokenEmbedding: ids [B, T] (int64) -> rows of a learned table [V, D], as [B, T, D] float32.
//
// Saves only the ids (8 bytes per position): backward needs to know which table row each
// position's gradient belongs to, nothing else. The table's gradient is a scatter-add,
// deterministic on both backends (ops/embedding.h: one owner per row, positions added in order).
// There is no gradient with respect to the ids (they are integers): backward returns an undefined
// tensor, and a model puts this layer first.
//
// The GPT ties its output head to this table (gpt.h): the head then writes its part of the
// table's gradient first, and the model runs this layer's backward with GradMode::Accumulate, so
// grad_ready fires once, when both parts are in.
#pragma once

#include "gtl/nn/module.h"

namespace gtl::nn {

class TokenEmbedding final : public Module {
 public:
  // Table normal(0, 0.02) (GPT-2's initialisation), drawn from `gen` on the CPU.
  TokenEmbedding(int64_t vocab, int64_t dim, Generator& gen);

  int64_t vocab() const { return vocab_; }
  int64_t dim() const { return dim_; }
  const ParamRef& weight() const { return params_[0]; }

  // Input shape [B, T] (N = B*T positions). A lookup does no arithmetic:
  //   forward:  flops 0; bytes N ids (8 each) + N*D floats read + N*D written
  //   backward: flops N*D (one add per gradient element); bytes N ids + N*D dy read + V*D written
  ComputeCost forward_cost(const Shape& input_shape) const override;
  ComputeCost backward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& ids, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  int64_t vocab_, dim_;
};

}  // namespace gtl::nn
