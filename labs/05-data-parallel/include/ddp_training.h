// Lab 05's training harness (provided, pristine): the lab model, the reference cluster of the
// simulated timelines, and one data-parallel training run that your DDP plugs into.
//
//   TrainResult r = train_lab_model(comm, config, [](Communicator& c, nn::Module& m,
//                                                    nn::ParameterBuffer& b) {
//     return [&c, &b] { flat_ddp_sync(c, b.params()); };   // what runs after each backward
//   });
//
// Each rank builds the lab model from the same seed, reads its own shard of SyntheticDigits (the
// core's DataLoader sharding, so these runs do not depend on your TODO 2), computes the mean
// cross-entropy of its batch, runs backward (gradients overwrite the flat buffer), calls the sync
// you plug in, and steps AdamW on the one flat parameter. train_single_process() is the reference:
// ONE process runs the same N shards one after the other and averages their gradients in rank
// order, acc = g0; acc += g1; ...; acc /= N, which is mathematically the gradient of the full
// global batch and, bit for bit, what the core's deterministic all-reduce computes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/distributed/timeline.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"

namespace lab05 {

using gtl::Tensor;
using gtl::dist::Communicator;

// The model every correctness test trains: Flatten -> Linear(784, 32) -> 2 residual blocks ->
// LayerNorm -> Linear(32, 10): 14 parameters in 7 layers.
gtl::nn::ModelConfig lab_model();

// The model and cluster of the simulated timelines (TODO 5): a wider MLP (hidden 128, 4 residual
// blocks, 0.63 M parameters, kReferenceBatchPerRank = 128 samples per rank) on two ranks, one per
// node, each of 1 TFLOP/s and 300 GB/s, the nodes joined by 100 Gb/s Ethernet (12.5 GB/s, 10 us
// per message). A modest cluster on purpose: backward compute and communication are then of the
// same order, as for a real model on a real cluster (on H100s this small model would be all
// latency).
gtl::nn::ModelConfig reference_model();
gtl::dist::CostModel reference_cluster();
constexpr int64_t kReferenceBatchPerRank = 128;
constexpr int64_t kReferenceBucketBytes = 256 * 1024;

struct TrainConfig {
  gtl::nn::ModelConfig model = lab_model();
  int64_t dataset_size = 50;   // not a multiple of 3 or 4: the last shard is padded
  int64_t batch_per_rank = 4;  // samples each rank takes per step
  int64_t steps = 3;
  uint64_t data_seed = 11;
  float lr = 1e-2f;
  gtl::Device device = gtl::Device::cpu();  // where the model, the batches and the step live
};

struct TrainResult {
  std::vector<float> weights;             // the flat parameter after the last step
  std::vector<float> losses;              // this rank's batch loss at every step
  std::vector<std::vector<float>> grads;  // the synced flat gradient at every step
  // train_single_process only: (|g_0| + ... + |g_N-1|) / N at every step, the scale of the
  // rounding error of a sum of N gradients taken in another order.
  std::vector<std::vector<float>> abs_grads;
};

// What runs after each backward, built once per rank before the first step (e.g. a BucketedDdp's
// finish(), or an all-reduce of the flat gradient).
using SyncFactory = std::function<std::function<void()>(Communicator&, gtl::nn::Module&,
                                                        gtl::nn::ParameterBuffer&)>;

// One rank's part of a data-parallel run (call it on every rank).
TrainResult train_lab_model(Communicator& comm, const TrainConfig& config,
                            const SyncFactory& make_sync);

// The single-process reference of a run on `world_size` ranks (see the header comment).
TrainResult train_single_process(int world_size, const TrainConfig& config);

// The sync the core would do: one all-reduce (Avg) of the flat gradient. The tests of TODOs that
// are not about the sync itself use it.
SyncFactory core_flat_sync();

// Result files of the real-process run (TODO 7): written by rank 0, floats as exact hex.
void write_result(const std::string& path, const TrainResult& result, const std::string& backend,
                  int world_size);
struct ResultFile {
  std::string backend;
  int world_size = 0;
  TrainResult result;
};
ResultFile read_result(const std::string& path);

}  // namespace lab05
