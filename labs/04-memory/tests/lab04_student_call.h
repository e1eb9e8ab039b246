// The runtime guard's scopes for lab 04's tests and benchmarks (grader/channel/
// gtl_reference_guard.h, docs/grader.md "Trust model"): while a test calls into a student TODO it
// holds the scope of that TODO, and every core reference the rubric forbids for it
// (labs/04-memory/rubric.yaml, `forbidden:`) refuses to run, however the student's code reached
// it (a direct call, a function pointer, a helper in another file). The lists are the rubric's;
// keep them in step. A scope ends at the end of the enclosing block:
//
//   const auto call = lab04_student_call::todo2();
#pragma once

#include "gtl_reference_guard.h"

namespace lab04_student_call {

using gtl::grading::StudentCall;

// TODO 2, LabCachingAllocator.
inline StudentCall todo2() {
  return StudentCall("LabCachingAllocator (TODO 2, caching_allocator.cpp)",
                     {"gtl::CachingAllocator::", "gtl::make_cpu_caching_allocator",
                      "gtl::HostSegmentSource::", "gtl::make_cpu_allocator"});
}
// TODO 4, accumulate_gradients.
inline StudentCall todo4() {
  return StudentCall("accumulate_gradients (TODO 4, grad_accumulation.cpp)",
                     {"gtl::train::Trainer::"});
}
// TODO 5a, Checkpoint and make_checkpointed_model.
inline StudentCall todo5a() {
  return StudentCall(
      "Checkpoint / make_checkpointed_model (TODO 5a, checkpointing.cpp)",
      {"gtl::nn::ActivationCheckpoint::", "gtl::nn::is_checkpointed", "gtl::nn::make_model"});
}
// TODO 5b, sqrt_segment_length.
inline StudentCall todo5b() {
  return StudentCall("sqrt_segment_length (TODO 5b, checkpointing.cpp)",
                     {"gtl::nn::ActivationCheckpoint::"});
}
// TODO 6, find_largest_batch.
inline StudentCall todo6() {
  return StudentCall("find_largest_batch (TODO 6, largest_batch.cpp)", {"gtl::CachingAllocator::"});
}

}  // namespace lab04_student_call
