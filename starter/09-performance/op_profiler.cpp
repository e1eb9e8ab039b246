// Lab 09, TODO 1: a profiler for the core (op_profiler.h). Steps 1a (recording the ops of a step
// through the module hooks), 1b (the key_averages table) and 1c (the Chrome trace).
#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/error.h"
#include "gtl/runtime/stream.h"
#include "op_profiler.h"

#ifdef GTL_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace lab09 {

struct OpProfiler::State {
  std::vector<OpRecord> ops;
  std::vector<StepSpan> steps;
  // TODO(lab09) step 1a: what a call of an op needs between its two hooks, and what the profiler
  // keeps between steps. Decide which modules make an op, so that a step's work is counted once.
  // END TODO(lab09)
};

OpProfiler::OpProfiler(gtl::nn::Module& model, gtl::Device device)
    : state_(std::make_unique<State>()) {
  // TODO(lab09) step 1a: install one hook set on `model` (keep its handle: discarding it removes
  // the hooks). Each op records its path, kind, pass, step, input shape, its own cost for that
  // pass (gtl/nn/module.h), host start and duration, and the differences of the allocator's
  // allocated_bytes, launch_counts() and host_sync_counts() between its two hooks. On a GPU
  // (device.is_cuda() && gtl::cuda_available()) record a timing event on the current stream at
  // each hook, and push an NVTX range named "<path> <pass>" under GTL_HAVE_NVTX. Hint: hooks nest
  // (a container's before_forward fires before its children's). About 65 lines with the State.
  (void)model, (void)device;
  // END TODO(lab09)
}

OpProfiler::~OpProfiler() = default;

void OpProfiler::begin_step() {
  // TODO(lab09) step 1a: open a step. The first step after construction or reset() is the
  // warm-up: record neither it nor its ops. About 3 lines.
  // END TODO(lab09)
}

void OpProfiler::end_step() {
  // TODO(lab09) step 1a: close the step (its host duration). About 4 lines.
  // END TODO(lab09)
}

void OpProfiler::finish() {
  // TODO(lab09) step 1a: stop recording and fill each op's device_us from its events. The host
  // may wait for the GPU here, once: where can that one wait make every event readable? Without
  // events there is nothing to wait for. Idempotent. About 7 lines.
  // END TODO(lab09)
}

void OpProfiler::reset() {
  // TODO(lab09) step 1a: forget every op, step and event; the next step is a warm-up again.
  // About 7 lines.
  // END TODO(lab09)
}

const std::vector<OpRecord>& OpProfiler::ops() const {
  return state_->ops;
}
const std::vector<StepSpan>& OpProfiler::steps() const {
  return state_->steps;
}

std::vector<OpRow> key_averages(const std::vector<OpRecord>& ops) {
  // TODO(lab09) step 1b: one row per "<kind> <pass>": calls, total time (device time where every
  // call of the row has one, else host time), FLOPs, bytes, allocated bytes, launches (kernels
  // and library calls), sorted by total time, largest first, equal totals by key in increasing
  // order. About 23 lines.
  (void)ops;
  throw gtl::Error("TODO(lab09) step 1b: key_averages is not implemented");
  // END TODO(lab09)
}

std::string chrome_trace(const std::vector<OpRecord>& ops, const std::vector<StepSpan>& steps) {
  // TODO(lab09) step 1c: the trace of op_profiler.h with nlohmann::json, steps and ops as
  // complete events on one track. Hint: which clock must the steps and the ops share for the ops
  // to nest inside their steps? About 21 lines.
  (void)ops, (void)steps;
  throw gtl::Error("TODO(lab09) step 1c: chrome_trace is not implemented");
  // END TODO(lab09)
}

}  // namespace lab09
