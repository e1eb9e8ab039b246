// Module events in a rank's trace: the forward and backward of every module of a model, with the
// FLOPs and bytes of each leaf layer's pass, recorded from hooks.
//
//   auto trace = comm.trace();
//   nn::HookHandle traced = dist::trace_modules(model, trace);
//   ... a training step: forward, backward with DDP's all-reduces ...
//   trace->events()   // forward/backward begin and end of each module, between the collectives
//
// With the communicator's own events (every collective, point-to-point call and wait) this gives
// the order a rank did things in: "the first bucket's all-reduce was issued before the backward of
// layer 0 began" is a question about positions in this list. The FLOPs and bytes let the cost model
// (timeline.h) turn the list into a simulated timeline. The hooks are an ordinary hook set: they
// sit beside a student's DDP or FSDP hooks and come off when the handle is destroyed.
#pragma once

#include <memory>

#include "gtl/distributed/trace.h"
#include "gtl/nn/module.h"

namespace gtl::dist {

// Records ModuleBegin / ModuleEnd events for every module of `model` (and modules added below it
// later) into `trace` until the returned handle is destroyed or removed. A leaf's ModuleEnd carries
// the cost of the pass that just ended (Module::forward_cost / backward_cost of its input shape).
// An ActivationCheckpoint segment's recomputation appears as a second forward inside its backward.
nn::HookHandle trace_modules(nn::Module& model, std::shared_ptr<Trace> trace);

}  // namespace gtl::dist
