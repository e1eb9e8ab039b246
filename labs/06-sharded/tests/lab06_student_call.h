// The runtime guard's scopes for lab 06's tests and harness (grader/channel/
// gtl_reference_guard.h, docs/grader.md "Trust model"): while a test, or the harness's train(),
// calls into a student TODO it holds the scope of that TODO, and every core reference the rubric
// forbids for it (labs/06-sharded/rubric.yaml, `forbidden:`) refuses to run, however the
// student's code reached it (a direct call, a function pointer, a helper in another file). The
// lists are the rubric's; keep them in step. A scope ends at the end of the enclosing block:
//
//   const auto call = lab06_student_call::todo7();
//
// The ranks are threads of one process and the scopes are process-wide, so a scope covers only
// code in which no rank calls a reference another rank's scope forbids. Where the tests call a
// TODO, the other ranks run only the test's own setup meanwhile (make_model, FlatParameter,
// AdamW, barriers, the TODO's own collectives), which uses none of these references; the
// expected values that need one (optim::clip_grad_norm_, ShardLayout) are computed outside every
// scope. In train() every rank runs the same stage, and no ZeRO stage's harness uses
// Communicator::all_reduce, ParameterBuffer or Trainer (only DDP's does, with no scope).
// Left out, one case: the sharded checkpoint that train() saves or loads between steps of a
// ZeRO-3 run (the end-to-end checkpoint checks) holds todo6_in_training(), without
// Communicator::all_gather: while one rank is still saving, another has started its next step,
// whose FSDP gathers call all_gather. TODO 6's own checks (ShardedCheckpointUnits, and
// consolidate everywhere) hold the full list.
#pragma once

#include "gtl_reference_guard.h"

namespace lab06_student_call {

using gtl::grading::StudentCall;

// TODO 1, shard arithmetic: the core's ShardLayout.
inline StudentCall todo1() {
  return StudentCall("shard arithmetic (TODO 1, shard_math.cpp)", {"gtl::nn::ShardLayout"});
}
// TODO 2, Zero1: its constructor, after_backward and step.
inline StudentCall todo2() {
  return StudentCall(
      "Zero1 (TODO 2, zero1.cpp)",
      {"gtl::dist::Communicator::all_reduce", "gtl::nn::ParameterBuffer", "gtl::train::Trainer"});
}
// TODO 3, Zero2: its constructor, before_backward, after_backward and step.
inline StudentCall todo3() {
  return StudentCall(
      "Zero2 (TODO 3, zero2.cpp)",
      {"gtl::dist::Communicator::all_reduce", "gtl::nn::ParameterBuffer", "gtl::train::Trainer"});
}
// TODO 4, Fsdp: its constructor, and a forward and backward of the model, whose hooks call
// before_forward ... after_backward, gather, and the prefetch (TODO 5) they issue.
inline StudentCall todo4() {
  return StudentCall(
      "Fsdp (TODO 4, fsdp.cpp: its constructor and hooks)",
      {"gtl::dist::Communicator::all_reduce", "gtl::nn::ParameterBuffer", "gtl::train::Trainer"});
}
// TODO 5, Fsdp::prefetch called on its own.
inline StudentCall todo5() {
  return StudentCall(
      "Fsdp::prefetch (TODO 5, fsdp.cpp)",
      {"gtl::dist::Communicator::all_reduce", "gtl::nn::ParameterBuffer", "gtl::train::Trainer"});
}
// TODO 6, save_sharded, load_sharded and consolidate.
inline StudentCall todo6() {
  return StudentCall("save_sharded / load_sharded / consolidate (TODO 6, sharded_checkpoint.cpp)",
                     {"gtl::dist::Communicator::all_gather", "gtl::train::Trainer"});
}
// TODO 6 between the steps of train()'s ZeRO-3 run: the other ranks may be gathering already
// (see above), so all_gather is left to the name scan there.
inline StudentCall todo6_in_training() {
  return StudentCall("save_sharded / load_sharded (TODO 6, sharded_checkpoint.cpp)",
                     {"gtl::train::Trainer"});
}
// TODO 7, agree_found_inf and clip_sharded_grad_norm_.
inline StudentCall todo7() {
  return StudentCall("agree_found_inf / clip_sharded_grad_norm_ (TODO 7, sharded_clip.cpp)",
                     {"gtl::dist::all_reduce_found_inf", "gtl::dist::clip_grad_norm_",
                      "gtl::optim::clip_grad_norm_"});
}
// TODO 8, gather_bf16_values and bf16_gather_bytes_sent.
inline StudentCall todo8() {
  return StudentCall(
      "gather_bf16_values / bf16_gather_bytes_sent (TODO 8, fsdp_mixed_precision.cpp)",
      {"gtl::dist::Communicator::all_reduce", "gtl::nn::FlatParameter::materialize_values"});
}

}  // namespace lab06_student_call
