// Profiler: what each layer of a training step costs, measured through the module hooks.
//
//   nn::Profiler profiler(model, Device::cuda(0));  // hooks on every layer of the model
//   for (int i = 0; i < 3; ++i) train_step();        // profiled (warm up before, or drop calls)
//   profiler.finish();                               // one host sync: reads the GPU's events
//   std::cout << profiler.table();                   // per layer kind and pass, by total time
//   profiler.write_chrome_trace("step.json");        // chrome://tracing or ui.perfetto.dev
//
// Why hooks: a step is a sequence of layer passes, and the hooks bracket each one (module.h), so
// every call of every layer is seen without touching the model's code. For each call of a leaf
// layer, and of a container that does work of its own besides its children's (ResidualMLP's
// residual add: its cost model prices it, or it launches), the profiler records (a container's
// figures are its bracket's less its children's, so every launch of a step is in one record):
// clang-format off
//   host time      steady clock from the hook before to the hook after. On a GPU this is the
//                  time to LAUNCH the layer's kernels, not to run them: the launches are
//                  asynchronous (timing without a synchronisation measures the host)
//   device time    two timing events on the current stream around the call (GPU only), read
//                  at finish(): the GPU's own clock, with no synchronisation during the step
//   FLOPs, bytes   the layer's cost model for the input it got (forward_cost / backward_cost)
//   allocated      the bytes the call left allocated on the device's current allocator
//                  (a forward's saved activations and output; a backward's frees show negative)
//   launches       kernels and library calls (launch_count.h); syncs: host waits (host_sync.h)
// clang-format on
// With NVTX (a CUDA build) every call is also an NVTX range named "<path> <pass>", so Nsight
// Systems shows the same names on its timeline. A forward recomputed inside an activation
// checkpoint's backward is recorded as pass "recompute". Hooks and events belong to the thread
// that runs the model; one profiler per model at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtl/nn/module.h"
#include "gtl/runtime/host_sync.h"
#include "gtl/runtime/launch_count.h"

namespace gtl::nn {

// One call of one leaf layer, or a container's own work in one call (recorded when it ends, after
// its children).
struct ProfiledCall {
  std::string path;             // the layer's path in the model ("1.fc1"; "model" for the root)
  std::string kind;             // Module::kind(): "linear", "relu", ...
  std::string pass;             // "forward", "backward" or "recompute"
  Shape input_shape;            // of the forward's input (also for the backward of that forward)
  double host_start_us;         // since the profiler was made
  double host_us;               // host time of the call
  double device_start_us = -1;  // GPU only, after finish(); -1 where not measured
  double device_us = -1;
  ComputeCost cost;
  int64_t allocated_bytes = 0;  // net change of the device allocator's allocated bytes
  LaunchCounts launches;
  HostSyncCounts syncs;
};

// The calls of one layer kind in one pass, added up (PyTorch's key_averages).
struct ProfileRow {
  std::string name;  // "<kind> <pass>", e.g. "Linear forward"
  int64_t calls = 0;
  double host_us = 0;
  double device_us = -1;  // -1 where not measured
  double flops = 0, bytes = 0;
  int64_t allocated_bytes = 0;
  LaunchCounts launches;
  HostSyncCounts syncs;

  // Adds `other`'s figures to this row's (the name stays); device time stays -1 only while
  // neither measured it.
  ProfileRow& operator+=(const ProfileRow& other);
};

class Profiler {
 public:
  // Installs its hooks on `model` (every module). `device` is where the model's tensors live: its
  // allocator is read, and on a GPU its events time each call.
  Profiler(Module& model, Device device);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Stops recording and reads the device times (waits once for the GPU). Idempotent.
  void finish();
  // Forgets what was recorded so far (after warm-up steps, say); recording goes on.
  void clear();

  const std::vector<ProfiledCall>& calls() const { return calls_; }
  // One row per (kind, pass), sorted by total time (device time where measured, else host
  // time), largest first; ties by name.
  std::vector<ProfileRow> summary() const;
  // summary() as a fixed-width table, with a total row.
  std::string table() const;
  // Every call as a Chrome trace event ("ph": "X"): the host times on one track, the device
  // times (GPU) on another, each with its shape, FLOPs, bytes, bytes allocated and launches.
  std::string chrome_trace() const;
  void write_chrome_trace(const std::string& path) const;

 private:
  struct Open;  // a call between its two hooks
  void begin(Module& m, const char* pass);
  void end();
  ProfiledCall record_of(Module& m, const char* pass, double host_start_us) const;

  Device device_;
  std::chrono::steady_clock::time_point origin_;
  std::vector<ProfiledCall> calls_;
  std::vector<std::vector<size_t>> call_pairs_;  // per call: its timing pair, then its children's
  std::vector<Open> open_;                       // calls whose end hook has not fired yet
  struct DeviceTiming;
  std::unique_ptr<DeviceTiming> timing_;  // GPU events, resolved by finish()
  bool finished_ = false;
  HookHandle hooks_;
};

}  // namespace gtl::nn
