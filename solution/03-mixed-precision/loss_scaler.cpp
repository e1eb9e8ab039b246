// Lab 03, TODO 3: the dynamic loss scaler (torch.cuda.amp.GradScaler's schedule).
//
// fp16 gradients below 2^-24 (6e-8) round to zero. Scaling the loss by S scales every gradient by
// S (the chain rule is linear), lifting them into fp16's range; unscale_ divides them by S again
// in float32 before anything reads them. Too large an S overflows a gradient to inf, which is
// harmless if it is seen before the optimizer uses it; too small an S lets gradients underflow
// again. The scale adapts to settle just below the overflow edge.
#include <cmath>

#include "mixed_precision.h"

namespace lab03 {

// SOLUTION(lab03) step 3
bool DynamicLossScaler::unscale_(const std::vector<ParamRef>& params) {
  // One pass: multiply and check each result as it is written (reading the gradients twice, once
  // to check and once to scale, would double the memory traffic of a memory-bound kernel).
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(state_.scale));
  found_inf_ = false;
  for (const ParamRef& p : params) {
    GTL_CHECK(p.grad.dtype() == DType::Float32 && !p.grad.is_cuda(),
              "DynamicLossScaler::unscale_: expected float32 CPU gradients, got " << p.grad.str(0));
    float* g = p.grad.data<float>();
    for (int64_t i = 0; i < p.grad.numel(); ++i) {
      g[i] *= inv_scale;
      if (!std::isfinite(g[i])) found_inf_ = true;
    }
  }
  return found_inf_;
}

bool DynamicLossScaler::step(gtl::optim::Optimizer& optimizer) {
  if (found_inf_) {
    ++skipped_;
    return false;
  }
  optimizer.step();
  return true;
}

void DynamicLossScaler::update() {
  if (found_inf_) {
    state_.scale *= options_.backoff_factor;
    state_.growth_tracker = 0;
  } else if (++state_.growth_tracker == options_.growth_interval) {
    const float grown = state_.scale * options_.growth_factor;
    if (std::isfinite(grown)) state_.scale = grown;
    state_.growth_tracker = 0;
  }
  found_inf_ = false;
}
// END SOLUTION(lab03)

}  // namespace lab03
