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
  // TODO(lab03) step 3a
  // In ONE pass over every gradient (float32, CPU): g *= 1 / scale (the reciprocal computed in
  // double, rounded once to float), and note whether any RESULT is inf or NaN. Store the verdict
  // in found_inf_ and return it. No temporary tensors. About 12 lines.
  (void)params;
  throw gtl::Error("TODO(lab03) step 3a: DynamicLossScaler::unscale_ is not implemented");
  // END TODO(lab03)
}

bool DynamicLossScaler::step(gtl::optim::Optimizer& optimizer) {
  // TODO(lab03) step 3b
  // Skip the step (count it in skipped_) when the last unscale_ found an inf/NaN; otherwise
  // optimizer.step(). Return whether it stepped. About 6 lines.
  (void)optimizer;
  throw gtl::Error("TODO(lab03) step 3b: DynamicLossScaler::step is not implemented");
  // END TODO(lab03)
}

void DynamicLossScaler::update() {
  // TODO(lab03) step 3c
  // The schedule, from found_inf_: overflow -> scale *= backoff_factor and the growth tracker
  // back to 0; clean -> tracker + 1, and when it reaches growth_interval: scale *= growth_factor
  // (unless that is inf) and the tracker back to 0. Then clear found_inf_ for the next step.
  // Everything the schedule depends on must live in state_ (a checkpoint saves only that).
  // About 10 lines.
  throw gtl::Error("TODO(lab03) step 3c: DynamicLossScaler::update is not implemented");
  // END TODO(lab03)
}

}  // namespace lab03
