// CrossEntropyLoss: the classifier head's loss, mean cross-entropy of logits against labels.
//
// Not a Module: it takes two inputs (logits and integer labels) and ends the forward pass with a
// scalar. It always computes in float32 (precision.h: exp and log of sums are where half
// precision breaks), so half logits are widened first. It saves the float32 logits and the
// labels; backward recomputes softmax from them (one pass over [N, C], cheaper than keeping the
// probabilities as well).
//
// backward(ctx, dloss) returns d(dloss * loss)/dlogits: pass the loss scale as dloss under fp16
// loss scaling (optim/loss_scaler.h), so every gradient upstream is scaled with it.
#pragma once

#include "gtl/nn/module.h"

namespace gtl::nn {

class CrossEntropyLoss {
 public:
  // logits [N, C] (any floating dtype), labels [N] int64 -> float32 [1] mean loss.
  Tensor forward(const Tensor& logits, const Tensor& labels, Context& ctx) const;
  // dlogits in the logits' dtype; consumes ctx.
  Tensor backward(Context& ctx, float dloss = 1.f) const;
};

}  // namespace gtl::nn
