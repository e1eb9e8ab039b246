// The runtime guard's scopes for lab 07's tests and harness (grader/channel/gtl_reference_guard.h,
// docs/grader.md "Trust model"): while a test calls into a student TODO it holds the scope of that
// TODO, and every reference the scope names refuses to run, however the student's code reached it
// (a direct call, a function pointer, a helper in another file).
//
// Each list is exactly the TODO's `forbidden:` entries in rubric.yaml: keep the two in step. TODOs
// 1, 3 and 4 forbid nothing, so they have no scope. TODO 5's executor is called by the harness
// (pipeline_training.cpp: pipeline_step and traced_reference_step enter its scope around run_stage,
// after a barrier of the stage's communicator, so that no rank is still at the start of
// pipeline_step, a reference the scope forbids, while another rank's scope is alive) and by
// executor_test.cpp directly. A scope ends at the end of the enclosing block; the tests compute
// their expected values (sequential_step, simulate_timeline of the executor's traces) outside
// every scope, after the ranks have joined.
#pragma once

#include "gtl_reference_guard.h"

namespace lab07_student_call {

using gtl::grading::StudentCall;

// TODO 2, split_micro_batches and micro_batch_weight: the trainer's gradient accumulation splits a
// batch into micro-batches itself, and the harness weighs its own micro-batches.
inline StudentCall todo2() {
  return StudentCall("split_micro_batches / micro_batch_weight (TODO 2, micro_batch.cpp)",
                     {"gtl::train::Trainer", "lab07::harness_loss_weights"});
}
// TODO 5, run_stage: the harness's own steps (which run the executor around itself), the trainer
// and the core's cost model (the timeline is what the tests derive from the executor's trace).
inline StudentCall todo5() {
  return StudentCall("run_stage (TODO 5, pipeline_executor.cpp)",
                     {"lab07::pipeline_step", "lab07::sequential_step", "gtl::train::Trainer",
                      "gtl::dist::simulate_timeline"});
}
// TODO 6, simulate_bubbles: the core's cost model simulates traces, not schedules.
inline StudentCall todo6() {
  return StudentCall("simulate_bubbles (TODO 6, bubble.cpp)",
                     {"gtl::dist::simulate_timeline", "gtl::dist::Timeline"});
}
// TODO 6 too, simulate_interleaved_bubbles (the order it runs, interleaved_schedule, is the
// harness's): the same.
inline StudentCall todo6_interleaved() {
  return StudentCall("simulate_interleaved_bubbles (TODO 6, bubble.cpp)",
                     {"gtl::dist::simulate_timeline", "gtl::dist::Timeline"});
}

}  // namespace lab07_student_call
