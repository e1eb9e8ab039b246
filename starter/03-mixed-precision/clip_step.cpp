// Lab 03, TODO 5: gradient clipping inside an AMP step, and skipping an overflowed step cleanly.
//
// Clipping compares the gradient norm with max_norm, a number in the units of the true gradient.
// The gradients an fp16 backward leaves are S times too large (S, the loss scale), and on an
// overflowed step some of them are inf or NaN. Where clipping belongs among the scaler's unscale_,
// step and update is step 5b's question.
#include <cmath>

#include "mixed_precision.h"

namespace lab03 {

float clip_by_global_norm(const std::vector<ParamRef>& params, float max_norm) {
  // TODO(lab03) step 5a
  // TODO 5, first part (ClipByGlobalNorm.*): the header's contract, checked against the core's
  // clipping (exactly on a small case, to a relative 1e-5 on seeded gradients); gradients whose
  // norm is already within max_norm come back untouched; gradients of 1e20 have a finite norm.
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
  // TODO 5, second part (AmpStep.*): the optimizer steps exactly when every unscaled gradient is
  // finite, and it steps on gradients clipped to a global norm of at most max_norm in TRUE units
  // (max_norm <= 0: no clipping). out.stepped says whether it stepped; out.grad_norm is the norm
  // clipping measured (whether or not it scaled anything), 0 when clipping did not run. After a
  // skipped step the weights are unchanged. The scaler unscales once and updates once per step,
  // overflow or not. Decide the order of the calls, and when clipping runs at all. About 5 lines.
  (void)scaler;
  (void)params;
  (void)optimizer;
  (void)max_norm;
  throw gtl::Error("TODO(lab03) step 5b: finish_amp_step is not implemented");
  // END TODO(lab03)
  return out;
}

}  // namespace lab03
