// Lab 09, TODO 1: a profiler for the core, written by you over the core's own seams: the module
// hooks (gtl/nn/module.h), the cost model (forward_cost / backward_cost), the allocator's
// statistics, launch_counts() and host_sync_counts(), and timing events on a GPU.
//
//   lab09::OpProfiler profiler(net.model(), device);  // hooks on the model
//   for (int i = 0; i < 3; ++i) {                       // the first step is the warm-up
//     profiler.begin_step();
//     net.step(i);
//     profiler.end_step();
//   }
//   profiler.finish();                                   // device times: one wait at most
//   std::cout << lab09::format_table(lab09::key_averages(profiler.ops()));
//   std::string json = lab09::chrome_trace(profiler.ops(), profiler.steps());
//
// The harness (src/nested_net.cpp): NestedNet, the model the profiler checks run, with containers
// inside containers. The course's own profiler is gtl::nn::Profiler (the demo's `train --profile`):
// compare your table with its table, but do not call it from op_profiler.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtl/nn/module.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/nn/sequential.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/host_sync.h"
#include "gtl/runtime/launch_count.h"
#include "gtl/tensor/tensor.h"

namespace lab09 {

// ---- the harness (src/nested_net.cpp) -------------------------------------------------------

// A small network of the core's layers nested four containers deep (model.txt-style: "0" linear,
// "1" sequential { "0" relu, "1" sequential { "0" linear, "1" gelu, "2" residual_mlp (hidden,
// expansion 2) } }, "2" linear), its weights on `device`, and `batches` inputs [batch, in] drawn
// from `seed`. A step is one forward and one backward (with a fixed upstream gradient); nothing is
// read on the host.
struct NestedNetConfig {
  int64_t in = 6, hidden = 8, out = 4, batch = 3, batches = 4;
  uint64_t seed = 0;
};

class NestedNet {
 public:
  NestedNet(const NestedNetConfig& config, gtl::Device device);
  void step(int64_t i);  // forward and backward on input i % batches
  gtl::nn::Sequential& model() { return *model_; }

 private:
  NestedNetConfig config_;
  std::unique_ptr<gtl::nn::Sequential> model_;
  std::unique_ptr<gtl::nn::ParameterBuffer> buffer_;
  std::vector<gtl::Tensor> x_;
  gtl::Tensor dy_;
};

// ---- TODO 1: a profiler for the core (op_profiler.cpp) ---------------------------------------

// One call of one op in one pass.
struct OpRecord {
  std::string path;  // the module's path in the model ("1.1.0")
  std::string kind;  // the module's kind ("linear")
  std::string pass;  // "forward" or "backward"
  int64_t step = 0;  // index into OpProfiler::steps()
  gtl::Shape input_shape;
  double host_start_us = 0;  // steady clock, since the profiler was made
  double host_us = 0;
  double device_us = -1;        // GPU only, after finish(); -1 where not measured
  gtl::nn::ComputeCost cost;    // the op's own work, from the cost model
  int64_t allocated_bytes = 0;  // net change of the device allocator's allocated bytes
  gtl::LaunchCounts launches;   // the op's own kernel launches and library calls
  gtl::HostSyncCounts syncs;    // host waits inside the op
};

// One recorded step, on the same host clock as the ops.
struct StepSpan {
  double host_start_us = 0;
  double host_us = 0;
};

// Records every op of the steps between begin_step() and end_step(), once each, in the order
// their calls end: the ops of a step's launches add up to the step's launches. The first step
// after construction or reset() is the warm-up and is not recorded; nothing outside a step is
// recorded; nothing after finish() until reset(). Profiling waits for the GPU at most once, in
// finish(), and never inside a step.
class OpProfiler {
 public:
  OpProfiler(gtl::nn::Module& model, gtl::Device device);
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  void begin_step();
  void end_step();
  // Stops recording and fills every op's device_us (on a GPU). Idempotent.
  void finish();
  // Forgets every op and step; recording starts again with a warm-up step.
  void reset();

  const std::vector<OpRecord>& ops() const;
  const std::vector<StepSpan>& steps() const;

 private:
  struct State;  // yours: define it in op_profiler.cpp
  std::unique_ptr<State> state_;
};

// A key_averages row: every call of one kind in one pass, added up.
struct OpRow {
  std::string key;  // "<kind> <pass>", e.g. "linear forward"
  int64_t calls = 0;
  double total_us = 0;  // device time where every call has one, else host time
  double flops = 0, bytes = 0;
  int64_t allocated_bytes = 0;
  int64_t launches = 0;  // kernels and library calls
};

// Rows sorted by total_us, largest first; equal totals by key, in increasing order.
std::vector<OpRow> key_averages(const std::vector<OpRecord>& ops);
// The rows as a fixed-width text table with a header line (provided, in src/nested_net.cpp).
std::string format_table(const std::vector<OpRow>& rows);

// A Chrome trace (chrome://tracing, ui.perfetto.dev): {"traceEvents": [...]}, one complete event
// ("ph": "X", "pid": 0, "tid": 0, "ts" and "dur" in microseconds of host time) per step, named
// "step <n>" (n from 1), and one per op named "<path> <pass>" with "args" holding its "flops",
// "bytes", "allocated_bytes" and "launches", the ops' events in the order of `ops`; every op's
// event lies inside its step's.
std::string chrome_trace(const std::vector<OpRecord>& ops, const std::vector<StepSpan>& steps);

}  // namespace lab09
