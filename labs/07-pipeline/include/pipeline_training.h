// Lab 07's harness (provided, pristine): the lab model and batch, the reference cluster of the
// simulated timelines, one pipelined training step built around your executor (TODO 5), and the
// sequential step it must equal.
//
//   PipelineConfig config;                       // model, boundaries, micro-batches
//   StageResult r = pipeline_step(comm, config, schedule[comm.rank()]);   // on every rank
//   StageResult whole = sequential_step(config); // one process, the same micro-batches in order
//
// pipeline_step builds rank s's stage with nn::make_stage(model, b_s, b_{s+1}) (only its own
// parameters, bitwise the whole model's initial weights), gives it a ParameterBuffer, fills a
// StageStep and calls run_stage. sequential_step runs the WHOLE model on the same micro-batches,
// one after the other, forward then backward, gradients overwritten by the first and accumulated
// after: per layer exactly the operations of a pipeline whose backwards run in micro-batch order
// (GPipe and 1F1B both do), so the two agree bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/distributed/timeline.h"
#include "gtl/nn/models.h"
#include "pipeline.h"

namespace lab07 {

// The model of the correctness tests: Flatten -> Linear(784, 32) -> 2 residual blocks ->
// LayerNorm -> Linear(32, 10): 6 top-level layers.
gtl::nn::ModelConfig lab_model();

// The batch of the tests: `rows` synthetic digits (images [rows, 1, 28, 28], labels [rows]),
// drawn from `seed`, on the CPU.
struct Batch {
  Tensor images;
  Tensor labels;
};
Batch lab_batch(int64_t rows, uint64_t seed = 3);

// One sample's shape of the activation at `boundary` (the input of layer `boundary`) of an mlp:
// the image before layer 0, [in] after the Flatten, [hidden] after that, [classes] at the end.
Shape boundary_sample_shape(const gtl::nn::ModelConfig& config, int64_t boundary);

// Parameters (elements) of each top-level layer of the model.
std::vector<double> layer_parameter_counts(const gtl::nn::ModelConfig& config);

struct PipelineConfig {
  gtl::nn::ModelConfig model = lab_model();
  std::vector<int64_t> boundaries = {0, 2, 4, 6};  // stage s: layers [b_s, b_{s+1})
  int64_t batch = 12;
  int64_t micro_batches = 4;
  uint64_t data_seed = 3;
  gtl::Device device = gtl::Device::cpu();
};

// Micro-batch i: rows [i * batch / m, (i + 1) * batch / m), and each one's loss weight. (Not
// TODO 2's split, which puts the larger micro-batches first: the harness must not depend on it.)
std::vector<MicroBatch> harness_micro_batches(int64_t batch, int64_t m);
std::vector<float> harness_loss_weights(const std::vector<MicroBatch>& micro_batches,
                                        int64_t batch);

// What a stage (or the whole model) computed in one step: the batch's loss (the last stage; 0 on
// the others) and every one of its parameters' gradients, by name ("3.fc1.weight").
struct StageResult {
  float loss = 0.f;
  std::map<std::string, std::vector<float>> grads;
  // pipeline_step: the most bytes the rank's allocator (on config.device) held during run_stage
  // beyond what it held before it: the activations in flight, the messages, the temporaries.
  int64_t step_peak_bytes = 0;
  // The same allocator's raw events during run_stage (allocate +bytes, free -bytes, in order):
  // step_peak_bytes is the highest level they reach from 0.
  std::vector<int64_t> step_events;
};

// Stage s's StageStep of `config` around `layers` (the stage's layers, already built): the
// harness's micro-batches and loss weights, the batch's images on stage 0 and labels on the last,
// the boundary shapes. pipeline_step runs one; a test may run the same one twice.
StageStep harness_stage_step(const PipelineConfig& config, int s, const StageSchedule& actions,
                             gtl::nn::Sequential& layers);

// Rank comm.rank()'s stage of one pipelined step (call it on every rank, comm.world_size() ==
// boundaries.size() - 1), running `actions` with your run_stage. Every rank passes a barrier of
// `comm` first (a "barrier" in its counters, no bytes), then calls run_stage inside TODO 5's
// guard scope (tests/lab07_student_call.h): the references the rubric forbids TODO 5 (this
// function among them) end the program while your executor runs.
StageResult pipeline_step(Communicator& comm, const PipelineConfig& config,
                          const StageSchedule& actions);
// The same step on one process, the whole model (see the header comment).
StageResult sequential_step(const PipelineConfig& config);

// The reference of the simulated timelines: an mlp whose 4 stages [0,2) [2,3) [3,4) [4,7) cost
// the same (Flatten + Linear(4118, 512), then one residual block of width 512 each: 4118 inputs
// make the first stage's GEMM cost what a block's GEMMs, LayerNorm, GELU and addition cost; the
// last stage adds the LayerNorm and the Linear(512, 10) head, 0.34% more), on a cluster where only
// GEMMs take time (1 TFLOP/s, memory and links free). There the bubble of GPipe and 1F1B is the
// formula's.
gtl::nn::ModelConfig reference_model();
std::vector<int64_t> reference_boundaries();
gtl::dist::CostModel reference_cluster();
constexpr int64_t kReferenceRowsPerMicroBatch = 4;

// Rank comm.rank()'s stage of one step of the reference model with m micro-batches of
// kReferenceRowsPerMicroBatch rows, its layers and point-to-point traced (dist::trace_modules):
// returns the rank's trace, for simulate_timeline.
std::vector<gtl::dist::TraceEvent> traced_reference_step(Communicator& comm,
                                                         const StageSchedule& actions, int64_t m);

// Result files of the real-process run (pipeline_main.cpp): one per rank, floats as exact hex.
void write_stage_result(const std::string& path, const StageResult& result,
                        const std::string& backend, int world_size);
struct StageResultFile {
  std::string backend;
  int world_size = 0;
  StageResult result;
};
StageResultFile read_stage_result(const std::string& path);

}  // namespace lab07
