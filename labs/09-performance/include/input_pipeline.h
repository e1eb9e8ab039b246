// Lab 09, TODO 3: an input pipeline, and the provided harness that measures it on a virtual clock.
//
//   TODO 3  input_pipeline.cpp  InputPipeline: worker threads that load a slow data set's batches
//                               ahead of the training loop, at most `depth` in flight, handed out
//                               in the data set's order (pinned staging and a copy stream on CUDA)
//
// The harness (src/virtual_clock.cpp, src/pipeline_loop.cpp): a VirtualClock that only the harness
// moves, a SlowDataset whose batch g costs cost(g) ticks of it, and run_pipeline, the training loop
// that measures a pipeline: every step costs S ticks, and a step waited when its batch was not
// loaded yet at the tick it asked for it. The clock moves only when every load that a free worker
// and a free slot allow has started, so the count is the same under every thread schedule. The
// handout (README.md, TODO 3) explains the model and how the counts follow from it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"
#include "gtl/tensor/tensor.h"

namespace lab09 {

// ---- the harness (src/virtual_clock.cpp) ----------------------------------------------------

// Ticks of simulated time. Loads wait on it; only run_pipeline moves it, and it records what
// run_pipeline measures: when each load started and whether it has returned.
class VirtualClock {
 public:
  int64_t now() const;

 private:
  friend class SlowDataset;
  friend struct ClockDriver;  // src/virtual_clock.cpp: run_pipeline's side of the clock
  struct Load {
    int64_t start = 0, done = 0;
    bool returned = false;
  };
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  int64_t now_ = 0;
  bool released_ = false;          // the run is over: every load returns at once
  std::map<int64_t, Load> loads_;  // by batch g
  int64_t started_ = 0, returned_ = 0;
  int64_t asked_ = 0;  // next() calls that asked for a batch, the current one included
  int64_t max_in_flight_ = 0;
  std::thread::id consumer_;  // the training loop's thread: a load there costs it the ticks
  bool in_next_ = false;
  std::chrono::milliseconds grace_{10000};
  std::string late_;
};

// A data set of `batches` batches of [rows, cols] float32 values drawn from `seed`. Loading batch g
// (g counts on across epochs: epoch g / batches, batch g % batches) costs cost(g) ticks of the
// clock: load() returns when the clock has moved that far past the tick it was called at. Loading
// batch `fail_at` (if >= 0) throws std::runtime_error after its ticks. Thread-safe.
class SlowDataset {
 public:
  struct Config {
    int64_t batches = 6;
    int64_t rows = 4, cols = 3;
    std::vector<int64_t> costs = {3};  // cost(g) = costs[g % costs.size()] ticks
    uint64_t seed = 1;
    int64_t fail_at = -1;
  };
  SlowDataset(Config config, std::shared_ptr<VirtualClock> clock);

  int64_t batches() const { return config_.batches; }
  gtl::Shape batch_shape() const { return {config_.rows, config_.cols}; }
  int64_t cost(int64_t g) const;
  // Batch g's values (rows * cols floats) into `out`, after cost(g) ticks. Blocks the caller.
  void load(int64_t g, float* out) const;
  // What load(g) writes, at once (the tests' and the judge's reference).
  std::vector<float> values(int64_t g) const;

  const Config& config() const { return config_; }

 private:
  friend struct ClockDriver;
  Config config_;
  std::shared_ptr<VirtualClock> clock_;
};

// ---- TODO 3: the input pipeline (input_pipeline.cpp) ----------------------------------------

struct PipelineOptions {
  int workers = 2;  // W: threads that call SlowDataset::load
  int depth = 2;    // D: batches loading or loaded and not yet returned by next(), at most
  gtl::Device device = gtl::Device::cpu();
};

struct PipelineBatch {
  gtl::Tensor values;  // [rows, cols] float32 on the pipeline's device
  int64_t epoch = 0, index = 0;
  std::shared_ptr<gtl::Event> ready;  // CUDA: recorded after the copy; null on the CPU
  // Given (src/virtual_clock.cpp): makes `stream` wait on `ready` on the GPU, without a host
  // synchronisation, and tells the allocator the memory is used there. A no-op on the CPU.
  void wait(const gtl::Stream& stream = gtl::current_stream()) const;
};

// Loads the data set's batches 0, 1, 2, ... (epoch after epoch, without end) on `workers` threads,
// at most `depth` batches in flight, from the moment it is made. next() returns them in order:
// batches 0 .. batches-1 of epoch 0, then std::nullopt once (the end of the epoch), then epoch 1's,
// and so on. An exception thrown by load() is rethrown by the next() that would have returned that
// batch (after every batch before it). On a CUDA device a batch is loaded into pinned staging
// memory and copied to the device on a copy stream of the pipeline's; next() never makes the
// host wait for the GPU. The destructor stops and joins the workers at any point, without hanging.
class InputPipeline {
 public:
  InputPipeline(std::shared_ptr<const SlowDataset> dataset, PipelineOptions options);
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  std::optional<PipelineBatch> next();

 private:
  struct State;  // yours: define it in input_pipeline.cpp
  std::unique_ptr<State> state_;
};

// ---- the harness's training loop (src/pipeline_loop.cpp) ------------------------------------

struct RunConfig {
  int64_t step_ticks = 1;  // S: what a training step costs
  int64_t epochs = 2;
};

struct RunResult {
  int64_t steps = 0;          // batches returned
  int64_t waits = 0;          // steps whose batch was not loaded at the tick next() was called
  int64_t max_in_flight = 0;  // the most batches started and not yet returned by next()
  int64_t ticks = 0;          // the clock when the last step ended
  std::vector<int64_t> waited_steps;  // which steps waited (0-based, counting every epoch)
  std::vector<float> seen;            // every returned batch's values, in the order returned
  std::vector<std::string> errors;    // what came out wrong (order, content, epoch ends)
  int64_t host_syncs = 0;             // this thread's host syncs in next() and wait(), in all
  int64_t threw_at = -1;  // the step whose next() threw, if one did (the run stops there)
  std::string thrown;     // what it threw
  std::string late;       // not empty when a load started later than a free worker and slot allow
};

// The training loop: makes `make()`'s pipeline over `dataset`'s clock at tick 0, and runs
// config.epochs epochs of steps (each S ticks) on it, checking every batch and epoch end. The
// clock moves only when the loads the pipeline's W and D allow have all started (or after a grace
// of real time, then reported in `late`). Releases the clock before destroying the pipeline.
RunResult run_pipeline(const std::shared_ptr<SlowDataset>& dataset, const PipelineOptions& options,
                       const RunConfig& config,
                       const std::function<std::unique_ptr<InputPipeline>()>& make);

}  // namespace lab09
