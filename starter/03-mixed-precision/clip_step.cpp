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
  // TODO(lab03) step 5a
  // norm = sqrt(sum of the squares of every gradient element, accumulated in double); coef =
  // max_norm / (norm + 1e-6f) in float; when coef < 1, every gradient *= coef. Return the norm.
  // About 14 lines.
  (void)params;
  (void)max_norm;
  throw gtl::Error("TODO(lab03) step 5a: clip_by_global_norm is not implemented");
  // END TODO(lab03)
}

StepOutcome finish_amp_step(GradScaler& scaler, const std::vector<ParamRef>& params,
                            gtl::optim::Optimizer& optimizer, float max_norm) {
  StepOutcome out;
  // TODO(lab03) step 5b
  // In this order: unscale (scaler.unscale_ returns whether the step overflowed); clip with
  // clip_by_global_norm only when it did not overflow and max_norm > 0 (record the norm);
  // out.stepped = scaler.step(optimizer); scaler.update(). Ask yourself why unscaling must come
  // before clipping, and what clipping an inf gradient would do. About 4 lines.
  (void)scaler;
  (void)params;
  (void)optimizer;
  (void)max_norm;
  throw gtl::Error("TODO(lab03) step 5b: finish_amp_step is not implemented");
  // END TODO(lab03)
  return out;
}

}  // namespace lab03
