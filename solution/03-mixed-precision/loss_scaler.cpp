// Lab 03, TODO 3: the dynamic loss scaler (torch.cuda.amp.GradScaler's schedule).
//
// fp16 gradients below 2^-24 (6e-8) round to zero. Scaling the loss by S scales every gradient by
// S (the chain rule is linear), lifting them into fp16's range; unscale_ divides them by S again
// in float32 before anything reads them. Too large an S overflows a gradient to inf, which is
// harmless if seen: skip that step and halve S. After growth_interval clean steps in a row, try a
// larger S (x2). The scale settles just below the overflow edge, as high as the gradients allow.
#include <cmath>

#include "mixed_precision.h"

namespace lab03 {

bool DynamicLossScaler::unscale_(const std::vector<ParamRef>& params) {
  // SOLUTION(lab03) step 3a
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
  // END SOLUTION(lab03)
}

bool DynamicLossScaler::step(gtl::optim::Optimizer& optimizer) {
  // SOLUTION(lab03) step 3b
  if (found_inf_) {
    ++skipped_;
    return false;
  }
  optimizer.step();
  return true;
  // END SOLUTION(lab03)
}

void DynamicLossScaler::update() {
  // SOLUTION(lab03) step 3c
  if (found_inf_) {
    state_.scale *= options_.backoff_factor;
    state_.growth_tracker = 0;
  } else if (++state_.growth_tracker == options_.growth_interval) {
    const float grown = state_.scale * options_.growth_factor;
    if (std::isfinite(grown)) state_.scale = grown;
    state_.growth_tracker = 0;
  }
  found_inf_ = false;
  // END SOLUTION(lab03)
}

}  // namespace lab03
