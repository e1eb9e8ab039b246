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

// TODO(lab03) step 3: DynamicLossScaler: unscale_, step and update.
// Spec (LossScaler.*, AmpTraining.*): the header's GradScaler contract, and the schedule of the
// handout's table ("The loss scaler"), which you derive. unscale_ multiplies every float32 CPU
// gradient by 1 / scale in ONE pass with no temporary tensor; that factor is 1.0 / scale computed
// in double and rounded once to float (the tests compare bit for bit). skipped_steps() counts the
// steps step() skipped. A checkpoint saves only state_ (load_state after any step continues the
// run exactly), and the scale never becomes inf.
// Decide what unscale_ must check to answer "would the optimizer see an inf or NaN?", and which
// state each of the three calls reads and writes. About 30 lines.
bool DynamicLossScaler::unscale_(const std::vector<ParamRef>& params) {
  (void)params;
  throw gtl::Error("TODO(lab03) step 3: DynamicLossScaler::unscale_ is not implemented");
}

bool DynamicLossScaler::step(gtl::optim::Optimizer& optimizer) {
  (void)optimizer;
  throw gtl::Error("TODO(lab03) step 3: DynamicLossScaler::step is not implemented");
}

void DynamicLossScaler::update() {
  throw gtl::Error("TODO(lab03) step 3: DynamicLossScaler::update is not implemented");
}
// END TODO(lab03)

}  // namespace lab03
