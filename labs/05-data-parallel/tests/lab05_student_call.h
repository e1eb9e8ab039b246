// The runtime guard's scopes for lab 05's tests and benchmarks (grader/channel/
// gtl_reference_guard.h, docs/grader.md "Trust model"): while a test calls into a student TODO it
// holds the scope of that TODO, and every core reference the scope names refuses to run, however
// the student's code reached it (a direct call, a function pointer, a helper in another file).
//
// The lists are the rubric's `forbidden:` entries that make sense at run time: the core's
// collectives for the ring (TODO 1) and its loader for the sampler (TODO 2). The DDP TODOs call
// the communicator's all_reduce themselves, so its ring implementation runs there by design: for
// them the rubric's name scan and the traffic checks (which collective, how many bytes) stand.
// A scope ends at the end of the enclosing block; a rank that calls a core collective after its
// scope must first pass a barrier, so that no other rank is still inside its own scope.
#pragma once

#include "gtl_reference_guard.h"

namespace lab05_student_call {

using gtl::grading::StudentCall;

// TODO 1, ring_all_reduce: the core's collectives, by their public entry points and the ring
// implementation behind them.
inline StudentCall todo1() {
  return StudentCall(
      "ring_all_reduce (TODO 1, ring_all_reduce.cpp)",
      {"gtl::dist::Communicator::all_reduce", "gtl::dist::Communicator::reduce_scatter",
       "gtl::dist::Communicator::all_gather", "gtl::dist::RingCommunicator::do_"});
}
// TODO 2, shard_indices: the core's DataLoader shards an epoch the same way.
inline StudentCall todo2() {
  return StudentCall("shard_indices (TODO 2, distributed_sampler.cpp)", {"gtl::data::DataLoader"});
}

}  // namespace lab05_student_call
