// The runtime guard's scopes for lab 03's tests (grader/channel/gtl_reference_guard.h,
// docs/grader.md "Trust model"): while a test calls into a student TODO it holds the scope of
// that TODO, and every core reference the rubric forbids for it (labs/03-mixed-precision/
// rubric.yaml, `forbidden:`) refuses to run, however the student's code reached it (a direct
// call, a function pointer, a helper in another file). The lists are the rubric's; keep them in
// step. A scope ends at the end of the enclosing block:
//
//   const auto call = lab03_student_call::todo3();
//
// Not for the judge: it runs the core's references in place of the student's code.
#pragma once

#include <vector>

#include "gtl_reference_guard.h"
#include "mixed_precision.h"

namespace lab03_student_call {

using gtl::grading::StudentCall;

// TODO 3, DynamicLossScaler. A scope around a whole training run (amp_loop.h) with your
// scaler is sound: the loop itself uses no core loss scaler then.
inline StudentCall todo3() {
  return StudentCall("DynamicLossScaler (TODO 3, loss_scaler.cpp)", {"gtl::optim::LossScaler::"});
}
// TODO 4, MasterWeights: the names it forbids. Not around a backward pass: the core's
// Module::backward widens half gradients with detail::convert_into itself.
inline StudentCall todo4() {
  return StudentCall("MasterWeights (TODO 4, master_weights.cpp)",
                     {"gtl::optim::MasterWeights::", "gtl::optim::detail::convert_into"});
}
// TODO 5, finish_amp_step, as the tests call it: with the core's loss scaler plugged
// in through lab03::GradScaler (lab03_cases::CoreScaler), so the scaler is the test's, not the
// student's, and only the clipping and norm references of TODO 5's list are forbidden. Sound around
// a training run that ends each step with finish_amp_step (amp_loop.h, finish_with_lab_step): the
// loop clips nothing itself.
inline StudentCall todo5_with_core_scaler() {
  return StudentCall("finish_amp_step (TODO 5, clip_step.cpp)",
                     {"gtl::optim::clip_grad_norm_", "gtl::optim::scale_by_clip_coef_",
                      "gtl::ops::global_l2_norm"});
}

// Your clip_by_global_norm (TODO 5) inside its scope.
inline float clip_by_global_norm(const std::vector<gtl::optim::ParamRef>& params, float max_norm) {
  const StudentCall call("clip_by_global_norm (TODO 5, clip_step.cpp)",
                         {"gtl::optim::clip_grad_norm_", "gtl::optim::scale_by_clip_coef_",
                          "gtl::ops::global_l2_norm"});
  return lab03::clip_by_global_norm(params, max_norm);
}

// Your finish_amp_step (TODO 5) with the core's scaler (lab03_cases::CoreScaler) in its
// scope.
inline lab03::StepOutcome finish_amp_step(lab03::GradScaler& scaler,
                                          const std::vector<gtl::optim::ParamRef>& params,
                                          gtl::optim::Optimizer& optimizer, float max_norm) {
  const StudentCall call = todo5_with_core_scaler();
  return lab03::finish_amp_step(scaler, params, optimizer, max_norm);
}

}  // namespace lab03_student_call
