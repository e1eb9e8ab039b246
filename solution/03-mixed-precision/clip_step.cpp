// Lab 03, TODO 5: gradient clipping inside an AMP step, and skipping an overflowed step cleanly.
//
// Clipping compares the gradient norm with max_norm, a number in the units of the true gradient.
// The gradients an fp16 backward leaves are S times too large (S, the loss scale), and on an
// overflowed step some of them are inf or NaN.
#include <cmath>

#include "mixed_precision.h"

namespace lab03 {

// SOLUTION(lab03) step 5
float clip_by_global_norm(const std::vector<ParamRef>& params, float max_norm) {
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
}

StepOutcome finish_amp_step(GradScaler& scaler, const std::vector<ParamRef>& params,
                            gtl::optim::Optimizer& optimizer, float max_norm) {
  StepOutcome out;
  const bool found_inf = scaler.unscale_(params);
  if (!found_inf && max_norm > 0.f) out.grad_norm = clip_by_global_norm(params, max_norm);
  out.stepped = scaler.step(optimizer);
  scaler.update();
  return out;
}
// END SOLUTION(lab03)

}  // namespace lab03
