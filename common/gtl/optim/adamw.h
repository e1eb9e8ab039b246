// AdamW: Adam with decoupled weight decay, as torch.optim.AdamW (Loshchilov & Hutter, 2019).
//
//   t += 1;  p *= 1 - lr*wd;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
//   p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
//
// "Decoupled": the decay shrinks the weight directly. Adam with an L2 penalty instead adds wd*p to
// the gradient, where it is divided by sqrt(v) like any gradient, so weights with large gradients
// are barely regularised. The two differ from the first step (adamw_test shows it).
//
// Fused: one kernel per parameter reads p, g, m, v once and writes p, m, v once (llm.c's adamw
// kernel), instead of the half-dozen elementwise ops an unfused version would chain over the same
// memory. The optimizer is memory-bound, so the fused kernel is that many times faster.
#pragma once

#include "gtl/optim/optimizer.h"

namespace gtl::optim {

struct AdamWOptions {
  float lr = 1e-3f;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  float weight_decay = 0.01f;
};

class AdamW : public Optimizer {
 public:
  AdamW(std::vector<ParamRef> params, AdamWOptions options = {});

  void step() override;
  float lr() const override { return options_.lr; }
  void set_lr(float lr) override { options_.lr = lr; }
  // "<param>.exp_avg" (m) and "<param>.exp_avg_sq" (v), float32, for every parameter. The step
  // count (bias correction) is step_count().
  NamedTensors state() const override;
  const AdamWOptions& options() const { return options_; }

 private:
  AdamWOptions options_;
  std::vector<Tensor> m_, v_;
};

}  // namespace gtl::optim
