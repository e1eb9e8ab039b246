// Stochastic gradient descent with momentum, as torch.optim.SGD (dampening 0).
//
//   g += weight_decay * p;  buf = momentum * buf + g;  p -= lr * (nesterov ? g + momentum*buf :
//   buf)
//
// The whole update of one element is one read of p, g, buf and one write of p, buf; on the GPU a
// single fused kernel per parameter does it (sgd.cu), where separate ops (axpy for the decay, scale
// and add for the buffer, axpy for the step) would read and write the same memory four times.
// The element rule itself lives in update_rules.h, shared by the CPU loop and the kernel.
#pragma once

#include "gtl/optim/optimizer.h"

namespace gtl::optim {

struct SgdOptions {
  float lr = 0.01f;
  float momentum = 0.f;      // 0: plain SGD, no buffer is allocated
  float weight_decay = 0.f;  // L2 penalty added to the gradient (coupled, unlike AdamW)
  bool nesterov = false;
};

class Sgd : public Optimizer {
 public:
  Sgd(std::vector<ParamRef> params, SgdOptions options);

  void step() override;
  float lr() const override { return options_.lr; }
  void set_lr(float lr) override { options_.lr = lr; }
  // "<param>.momentum_buffer" (float32) for every parameter when momentum != 0; nothing otherwise.
  NamedTensors state() const override;
  const SgdOptions& options() const { return options_; }

 private:
  SgdOptions options_;
  std::vector<Tensor> momentum_;
};

}  // namespace gtl::optim
