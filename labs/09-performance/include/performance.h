// Lab 09, performance engineering: the declarations of your TODOs and the lab's provided harness.
//
//   TODO 2  fast_loop.cpp     a training loop with the slow loop's losses and log lines and one
//                             host synchronisation per log line
//   TODO 3  input_pipeline.cpp  an input pipeline on a virtual clock: declared, with its harness,
//                               in input_pipeline.h
//   TODO 4  graphed_step.cpp  a training step captured once as a CUDA graph and replayed
//   TODO 5  roofline.cpp      theoretical occupancy (5a), the roofline of every op of a step (5b),
//                             the step's MFU and its time at the roofline (5c)
//   TODO 6  faster_step.cpp   the provided slow evaluation step made fast (6a) and its before/after
//                             counts, measured (6b)
//
// The harness (src/): Trainee, a small classifier trained with SGD on batches that already live on
// its device, slow_loop, the loop TODO 2 makes fast, and Head with slow_eval_step, the step TODO 6
// makes fast. The handout (README.md) explains the
// concepts; the tests in tests/ say what they expect when they fail.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtl/nn/module.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/nn/sequential.h"
#include "gtl/optim/sgd.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/occupancy.h"
#include "gtl/tensor/tensor.h"

namespace lab09 {

// ---- the harness (src/trainee.cpp, src/slow_loop.cpp) ---------------------------------------

// The classifier of every training loop of this lab: nn::make_model's mlp (input [1, side, side],
// `hidden` wide, `blocks` residual blocks, `classes` outputs) with cross-entropy and SGD at a
// constant learning rate, and `batches` batches of `batch` samples drawn from data_seed, all moved
// to `device` when the trainee is made (reading a batch later moves nothing).
struct TraineeConfig {
  int64_t side = 4;
  int64_t hidden = 8;
  int64_t blocks = 1;
  int64_t classes = 5;
  int64_t batch = 4;
  int64_t batches = 8;
  uint64_t model_seed = 0;
  uint64_t data_seed = 1;
  float lr = 0.1f;
};

class Trainee {
 public:
  Trainee(const TraineeConfig& config, gtl::Device device);

  // One training step on (x, labels): forward, cross-entropy, backward, SGD. Returns the loss, a
  // one-element float32 tensor on the device; nothing waits for the GPU (no host read).
  gtl::Tensor step(const gtl::Tensor& x, const gtl::Tensor& labels);

  // Batch i % batches, on the device: x [batch, 1, side, side] float32, labels [batch] int64.
  const gtl::Tensor& x(int64_t i) const;
  const gtl::Tensor& labels(int64_t i) const;

  const TraineeConfig& config() const { return config_; }
  gtl::Device device() const { return device_; }
  gtl::nn::Sequential& model() { return *model_; }
  // Every weight of the model in one flat float32 tensor on the device.
  const gtl::Tensor& weights() const { return buffer_->values(); }

 private:
  TraineeConfig config_;
  gtl::Device device_;
  std::unique_ptr<gtl::nn::Sequential> model_;
  std::unique_ptr<gtl::nn::ParameterBuffer> buffer_;
  std::unique_ptr<gtl::optim::Sgd> sgd_;
  std::vector<gtl::Tensor> x_, labels_;
};

struct LoopConfig {
  int64_t steps = 10;     // N: batches 0 .. N-1 of the trainee (modulo its number of batches)
  int64_t log_every = 4;  // K: a log line after every K-th step, and after the last step
};

struct LoopResult {
  std::vector<float> losses;     // every step's loss, in order (the loss history)
  std::vector<std::string> log;  // the log lines, in order
};

// The log line for the interval of steps that ends at `last_step` (0-based), given that
// interval's losses in order: "step 8: loss 1.234567 (mean of 4: 1.456789)".
std::string log_line(int64_t last_step, const std::vector<float>& interval_losses);

// The provided slow loop: N steps on batches 0 .. N-1, each batch copied into the loop's own input
// buffers first, the loss read on the host after every step, a log line (log_line) after every
// K-th step and after the last one, printed to stdout and kept in the result.
LoopResult slow_loop(Trainee& trainee, const LoopConfig& config);

// ---- TODO 2: find and remove host syncs (fast_loop.cpp) -------------------------------------

// The same N steps on the same batches as slow_loop, with bitwise the same losses and the same
// log lines (printed and kept), and exactly ceil(N / K) host synchronisations: one per log line.
// Called twice in a row, each call trains on where the last left off, like slow_loop.
LoopResult fast_loop(Trainee& trainee, const LoopConfig& config);

// ---- TODO 4: CUDA graphs (graphed_step.cpp) -------------------------------------------------

// A training step of `trainee`, captured once as a gtl::CudaGraph and replayed afterwards. The
// first call runs the step eagerly (the warm-up: it trains like any step) and then captures it;
// every later call copies its batch into the graph's input buffers without a host wait and
// replays the graph: one graph launch, no host synchronisation, no allocation. Losses and weights
// equal, bit for bit, those of calling trainee.step on the same batches.
class GraphedStep {
 public:
  explicit GraphedStep(Trainee& trainee);
  ~GraphedStep();
  GraphedStep(const GraphedStep&) = delete;
  GraphedStep& operator=(const GraphedStep&) = delete;

  // One training step on (x, labels), device tensors of the trainee's batch shape, which the
  // caller may reuse or free once this returns. Returns the step's loss: a one-element float32
  // tensor on the device, rewritten by the next call (read it, or copy it, before then).
  gtl::Tensor operator()(const gtl::Tensor& x, const gtl::Tensor& labels);

 private:
  struct State;  // yours: define it in graphed_step.cpp
  std::unique_ptr<State> state_;
};

// ---- TODO 5: occupancy, roofline, MFU (roofline.cpp) ----------------------------------------

// 5a: the theoretical occupancy of `kernel` on an SM with `sm`'s limits: every field of
// gtl::Occupancy (each resource's limit in blocks, the smallest, the warps it makes, the SM's warp
// slots, the resource that sets it). The hardware facts are in the handout (Occupancy).
gtl::Occupancy occupancy(const gtl::KernelResources& kernel, const gtl::SmLimits& sm);

// A GPU's peak figures: the roofline's two ceilings.
struct Peak {
  std::string name;        // "H200, FP32 SGEMM and device copy (measured)"
  double flops_per_s = 0;  // the compute ceiling, FLOP/s
  double bytes_per_s = 0;  // the memory ceiling, bytes/s
};

// One op of a training step: one module's own work in one pass.
struct OpRoofline {
  std::string path;  // the module's path in the model ("2.fc1")
  std::string kind;  // its kind ("linear")
  std::string pass;  // "forward" or "backward"
  double flops = 0;  // the cost model's figures for the module's last input shape
  double bytes = 0;
  double intensity = 0;        // arithmetic intensity, FLOPs per byte
  bool compute_bound = false;  // at or above the ridge point of the peak
  double bound_s = 0;          // the least time the op can take at these peaks
  // A forward run again during the backward pass (activation checkpointing, lab 04). 5b's rows
  // never are.
  bool recomputed = false;
};

// 5b: every op of one training step (forward and backward) of `model`, which has run one forward
// (each module's last_input_shape() is set), at `peak`. One row per module and pass whose cost is
// not zero (flops or bytes), in any order.
std::vector<OpRoofline> step_roofline(const gtl::nn::Module& model, const Peak& peak);

struct StepFigures {
  double flops = 0;              // the step's FLOPs, as MFU counts them
  double bound_s = 0;            // the least time the step's ops can take at the peak
  double mfu = 0;                // model FLOPs utilisation of the measured step
  double fraction_of_bound = 0;  // bound_s / measured: how close the step runs to the roofline
};

// 5c: the figures of a step that ran `ops` (rows as 5b makes them, bound_s filled; with activation
// checkpointing, also the forwards run again, marked recomputed) in `measured_s` seconds, at
// `peak`.
StepFigures step_figures(const std::vector<OpRoofline>& ops, double measured_s, const Peak& peak);

// ---- the harness of TODO 6 (src/slow_eval.cpp) ----------------------------------------------

// A classifier head and its batches, all on `device` when made: w1 [in, hidden], b1 [hidden],
// w2 [hidden, classes], b2 [classes], batches x [batch, in] float32 and labels [batch] int64.
struct HeadConfig {
  int64_t in = 12;
  int64_t hidden = 16;
  int64_t classes = 5;
  int64_t batch = 6;
  int64_t batches = 3;
  uint64_t seed = 0;
};

class Head {
 public:
  Head(const HeadConfig& config, gtl::Device device);
  const gtl::Tensor& w1() const { return w1_; }
  const gtl::Tensor& b1() const { return b1_; }
  const gtl::Tensor& w2() const { return w2_; }
  const gtl::Tensor& b2() const { return b2_; }
  // Batch i % batches.
  const gtl::Tensor& x(int64_t i) const;
  const gtl::Tensor& labels(int64_t i) const;
  const HeadConfig& config() const { return config_; }
  gtl::Device device() const { return device_; }

 private:
  HeadConfig config_;
  gtl::Device device_;
  gtl::Tensor w1_, b1_, w2_, b2_;
  std::vector<gtl::Tensor> x_, labels_;
};

// The provided slow evaluation step: loss = cross_entropy(gelu(x w1 + b1) w2 + b2, labels), the
// mean over the batch, read on the host. Correct, and slow in every way a profile shows: see
// src/slow_eval.cpp.
float slow_eval_step(const Head& head, const gtl::Tensor& x, const gtl::Tensor& labels);

// ---- TODO 6: make it faster (faster_step.cpp) -----------------------------------------------

// 6a: the same evaluation as slow_eval_step, fast. Every call after the first: the loss equal, bit
// for bit, to slow_eval_step's on the same batch; no host synchronisation; no CUDA graph; and at
// most the kernel launches, library calls and allocations that the handout's budget (TODO 6)
// allows. The first call may set up what later calls reuse.
class FastEval {
 public:
  explicit FastEval(const Head& head);
  ~FastEval();
  FastEval(const FastEval&) = delete;
  FastEval& operator=(const FastEval&) = delete;

  // The loss of (x, labels), device tensors of the head's batch shape: a one-element float32
  // tensor on the device, which the next call may rewrite (read it, or copy it, before then).
  gtl::Tensor operator()(const gtl::Tensor& x, const gtl::Tensor& labels);

 private:
  struct State;  // yours: define it in faster_step.cpp
  std::unique_ptr<State> state_;
};

// What one step costs, counted: per step, in the steady state.
struct StepCounts {
  double kernels = 0;      // the core's kernel launches (launch_counts().kernels)
  double library = 0;      // cuBLAS and cuDNN calls (launch_counts().library)
  double graphs = 0;       // graph launches (launch_counts().graphs)
  double host_syncs = 0;   // host synchronisations (host_sync_counts().total())
  double allocations = 0;  // allocations on the device's allocator (stats().num_allocs)
};

// The before/after table of TODO 6: what a call of each of two steps costs.
struct SpeedReport {
  StepCounts before, after;
};

// A step to count: call i runs it once, on batch i.
using CountedStep = std::function<void(int64_t i)>;

// 6b: run `before` for calls i = 0 .. steps-1, then `after` likewise, on `device`, and report what
// one call of each costs in the steady state. steps >= 2. Your table is
// speed_report(slow_eval_step's calls, a FastEval's calls, ...); the checks also give it steps of
// their own, so 6b's checks do not depend on your 6a.
SpeedReport speed_report(const CountedStep& before, const CountedStep& after, gtl::Device device,
                         int64_t steps);

}  // namespace lab09
