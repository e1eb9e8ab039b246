// Lab 03, TODO 5: clip after unscale, and skip cleanly on overflow.
//
// Clipping compares the gradient norm with max_norm, a number in the units of the true gradient.
// The gradients coming out of an fp16 backward are S times too large (the loss scale): clipping
// them first would compare S * norm with max_norm and shrink every step by S. So: unscale first,
// then clip. And an overflowed step (inf/NaN gradients) is not clipped at all: its norm is inf or
// NaN, the coefficient would turn every gradient into 0 or NaN, and the step is skipped anyway.
#include <cmath>

#include "mixed_precision.h"

namespace lab03 {

float clip_by_global_norm(const std::vector<ParamRef>& params, float max_norm) {
  // SOLUTION(lab03) step 5a
  double sum = 0.0;
  for (const ParamRef& p : params) {
    const float* g = p.grad.data<float>();
    for (int64_t i = 0; i < p.grad.numel(); ++i) sum += static_cast<double>(g[i]) * g[i];
  }
  const float norm = static_cast<float>(std::sqrt(sum));
  const float coef = max_norm / (norm + 1e-6f);
  if (coef < 1.f) {
    for (const ParamRef& p : params) {
      float* g = p.grad.data<float>();
      for (int64_t i = 0; i < p.grad.numel(); ++i) g[i] *= coef;
    }
  }
  return norm;
  // END SOLUTION(lab03)
}

StepOutcome finish_amp_step(GradScaler& scaler, const std::vector<ParamRef>& params,
                            gtl::optim::Optimizer& optimizer, float max_norm) {
  StepOutcome out;
  // SOLUTION(lab03) step 5b
  const bool found_inf = scaler.unscale_(params);
  if (!found_inf && max_norm > 0.f) out.grad_norm = clip_by_global_norm(params, max_norm);
  out.stepped = scaler.step(optimizer);
  scaler.update();
  // END SOLUTION(lab03)
  return out;
}

}  // namespace lab03
