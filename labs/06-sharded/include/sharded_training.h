// Lab 06's training harness (provided, pristine): the lab model, one data-parallel training run
// with the sharding stage you pick, and the exact per-rank figures the checks grade.
//
//   TrainResult r = train(comm, Stage::Zero3, config);   // on every rank (run_ranks)
//
// Each rank builds the lab model from the same seed, takes its own batches of SyntheticDigits (the
// core's DataLoader sharding, all of them loaded before the model is built), computes the mean
// cross-entropy of its batch, runs backward and steps AdamW, with the stage's sync:
//   Ddp    the reference: the model's ParameterBuffer, one all-reduce (Avg) of the flat gradient
//   Zero1  one FlatParameter for the whole model, your Zero1 (TODO 2)
//   Zero2  one FlatParameter with a gradient shard, your Zero2 (TODO 3)
//   Zero3  one FlatParameter per unit (make_units), your Fsdp (TODOs 4 and 5); AdamW over
//          Fsdp::shard_params()
// In the core's deterministic reduction mode every stage computes the same sums in the same
// order as Ddp, and AdamW is element-wise, so all four train bit for bit alike.
// TODO 6's checks save a Zero3 run's shards after some step (save_sharded) and resume another run
// from them (load_sharded): see TrainConfig.
// Everything runs on the CPU unless TrainConfig::device names a GPU: then the model, the units, the
// batches and AdamW's state live there, and the ranks are threads sharing that GPU (run_ranks with
// RunOptions::device, each rank with its own stream and CUDA caching allocator), the same code as
// on the CPU. The GPU check compares such a run with the CPU's (tests/gpu_test.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/distributed/timeline.h"
#include "gtl/nn/models.h"
#include "gtl/nn/sequential.h"
#include "sharded.h"

namespace lab06 {

enum class Stage { Ddp, Zero1, Zero2, Zero3 };
const char* stage_name(Stage stage);

// Flatten -> Linear(784, 32) -> 2 residual blocks -> LayerNorm -> Linear(32, 10): 5 units.
gtl::nn::ModelConfig lab_model();
// The simulated timelines' model and cluster (as lab 05's): hidden 128, 4 residual blocks, 128
// samples per rank, on two ranks of 1 TFLOP/s and 300 GB/s joined by 100 Gb/s Ethernet.
gtl::nn::ModelConfig reference_model();
gtl::dist::CostModel reference_cluster();
constexpr int64_t kReferenceBatchPerRank = 128;

// What make_units leaves in each unit: its full values and gradient materialised, as
// FlatParameter builds them, or only its shards, as FSDP keeps a unit between uses (for the checks
// of TODOs 5 and 8, which build units themselves and must not depend on TODO 4's constructor).
enum class UnitBuffers { Full, ShardsOnly };

// One unit per child of `model` that has parameters, each a FlatParameter on `device` padded for
// comm.world_size() ranks, holding `buffers`.
std::vector<Unit> make_units(gtl::nn::Sequential& model, const Communicator& comm,
                             gtl::Device device = gtl::Device::cpu(),
                             UnitBuffers buffers = UnitBuffers::Full);

struct TrainConfig {
  gtl::nn::ModelConfig model = lab_model();
  int64_t dataset_size = 50;
  int64_t batch_per_rank = 4;
  int64_t steps = 3;
  uint64_t data_seed = 11;
  float lr = 1e-2f;
  int prefetch = 0;  // Zero3 only: Fsdp's prefetch distance
  // Where the model, its units, the batches and AdamW's state live. A GPU needs the ranks run with
  // RunOptions::device set to it, so that each rank has its own stream and its own allocator there.
  gtl::Device device = gtl::Device::cpu();
  // Zero3 only, sharded checkpoints (TODO 6): save_sharded(checkpoint_dir) once
  // save_after_steps steps are done (0: never); resume_at_step > 0: load_sharded(checkpoint_dir)
  // before the first step and run steps resume_at_step .. steps-1 only.
  std::string checkpoint_dir;
  int64_t save_after_steps = 0;
  int64_t resume_at_step = 0;
};

struct TrainResult {
  std::vector<float> weights;  // every parameter after the last step, model order, concatenated
  std::vector<float> losses;   // this rank's batch loss at every step
  // This rank's allocator on config.device, relative to the bytes it held before the model was
  // built (the batches): after the last step (weights + gradients + optimizer state that persist
  // between steps), and the peak during the last step.
  int64_t persistent_bytes = 0;
  int64_t peak_bytes = 0;
  // The allocator's raw events during the last step (allocate +bytes, free -bytes, in order) and
  // the allocated bytes (same baseline) when it began: peak_bytes is the highest level they reach.
  int64_t step_start_bytes = 0;
  std::vector<int64_t> step_events;
  // The communicator's counters during the last step, by operation.
  std::map<std::string, gtl::dist::OpCounters> step_counters;
};

// One rank's part of a data-parallel run (call it on every rank).
TrainResult train(Communicator& comm, Stage stage, const TrainConfig& config);

// Persistent bytes of rank `rank` at stage `stage` by the ZeRO formulas, over buffers of
// `numels` real elements each (one per unit for Zero3, the whole model otherwise) padded for
// `world_size` ranks: the expected value of TrainResult::persistent_bytes (README: the formulas).
int64_t expected_persistent_bytes(Stage stage, const std::vector<int64_t>& numels, int world_size,
                                  int rank);

// Result files of the real-process runs (lab06_fsdp_train: ZeRO-3 with prefetch 1, or ZeRO-1 or
// ZeRO-2 with --stage; --stage bf16 writes the gathered bf16 copies, widened, as the weights):
// written by rank 0, floats as exact hex.
void write_result(const std::string& path, const TrainResult& result, const std::string& backend,
                  int world_size);
struct ResultFile {
  std::string backend;
  int world_size = 0;
  TrainResult result;  // weights and losses only
};
ResultFile read_result(const std::string& path);

}  // namespace lab06
