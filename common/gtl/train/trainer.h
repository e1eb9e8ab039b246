// Trainer: one training step from a batch to the optimizer, evaluation, and the full training
// state in one checkpoint.
//
//   train::Trainer trainer(options, std::make_shared<data::SyntheticDigits>(60000));
//   for (int i = 0; i < 500; ++i) trainer.step();            // loss, grad norm, skipped?
//   trainer.evaluate(test_set).accuracy;
//   trainer.save("ckpt.bin");  ...  trainer.load("ckpt.bin");  // continues bit for bit
//
// A step (docs/core.md follows it file by file):
// clang-format off
//   batch    data::DataLoader (shuffled by (seed, epoch), prefetched, on the device)
//   forward  the model (nn/) under the precision policy; cross-entropy in float32 (the gpt's:
//            over every position's next token, its [N*T, V] logits against the targets)
//   backward dloss = the loss scale (1 unless fp16), gradients OVERWRITE the flat gradient
//            buffer, so there is no zero_grad; with micro_batches > 1 the first micro-batch
//            overwrites and the others accumulate (GradMode)
//   sync     options.grad_sync(buffer), when set: DDP's all-reduce (Avg) of the flat gradient
//   unscale  LossScaler (fp16): gradients / scale, inf/NaN check -> skip the step
//   clip     clip_grad_norm_ on the one flat gradient
//   update   AdamW on the one flat parameter (one fused pass; it rewrites the half compute copy)
// clang-format on
//
// Ranks (data parallelism). With world_size W each rank builds the same model from the same seed
// (so all start identical, no broadcast needed) and its loader reads its own disjoint shard
// (DistributedSampler, data_loader.h). batch_size is the GLOBAL batch: each rank takes
// batch_size / W samples per step (PyTorch's DDP counts per rank instead; a global count keeps one
// set of options meaning the same training at any W). Rank r's k-th batch is positions
// r, r+W, ... of the global k-th batch, so the W shards of a step are exactly the samples the
// single process would see, and the average of the ranks' mean gradients is its gradient.
// The sync sits where PyTorch's DDP puts it: after the LAST micro-batch's backward (accumulation
// needs no communication) and BEFORE unscaling and clipping, so every rank unscales the same
// averaged gradient, sees the same inf/NaN verdict (all skip a step or none does) and clips by
// the same global norm: the ranks stay bitwise identical. The train layer knows no communicator:
// grad_sync is a plain function, e.g. [&](nn::ParameterBuffer& b) {
// comm.all_reduce(b.grads(), dist::ReduceOp::Avg); } (a DDP lab may instead all-reduce buckets
// from grad_ready hooks on model() and only wait for them in grad_sync).
//
// Bitwise resume: everything a step depends on is saved (parameters, AdamW moments and step
// count, loss scale and its growth counter, the data loader's position and seed, the step
// number), and every op is deterministic, so N steps in one go and K steps + save + load + N-K
// steps give identical losses, bit for bit. There is no other random state: data order is
// Philox(seed, epoch), and the model has no dropout.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gtl/data/data_loader.h"
#include "gtl/data/dataset.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/nn/precision.h"
#include "gtl/optim/adamw.h"
#include "gtl/optim/loss_scaler.h"

namespace gtl::train {

struct TrainerOptions {
  nn::ModelConfig model;
  Device device = Device::cpu();
  nn::PrecisionPolicy precision;  // fp16 turns the loss scaler on ...
  bool loss_scaling = true;       // ... unless this is false (fp16 unscaled: to see why not)
  int64_t batch_size = 64;        // global: each rank takes batch_size / world_size samples
  int64_t micro_batches = 1;      // gradient accumulation: the batch is split into this many parts
  float lr = 2e-3f;
  float weight_decay = 0.f;
  float max_grad_norm = 1.f;  // <= 0: no clipping
  uint64_t seed = 0;          // data order
  int prefetch = 2;           // batches the loader prepares ahead
  int rank = 0;               // this rank's data shard ...
  int world_size = 1;         // ... out of world_size (see the header comment)
  // Called after backward, before unscale and clipping: averages the gradients across ranks.
  // Empty: nothing (one process).
  std::function<void(nn::ParameterBuffer&)> grad_sync;
};

struct StepStats {
  float loss = 0.f;              // mean cross-entropy of this rank's batch (unscaled)
  float grad_norm = 0.f;         // global gradient norm before clipping (0 without clipping)
  bool stepped = true;           // false: fp16 overflow, the optimizer step was skipped
  int64_t activation_bytes = 0;  // saved by forward for backward (one micro-batch's contexts)
};

struct EvalStats {
  float loss = 0.f;
  float accuracy = 0.f;
  int64_t samples = 0;
};

class Trainer {
 public:
  Trainer(TrainerOptions options, std::shared_ptr<const data::Dataset> train_data);

  // One optimizer step on the loader's next batch (moving on to the next epoch when needed).
  StepStats step();
  // One optimizer step on the given batch: images [N, ...] float32, labels [N] int64, on device()
  // (with ranks: this rank's part of the global batch). For the gpt: ids [N, T] and next-token
  // targets [N, T], int64 (step() splits the loader's windows with data::next_token_batch).
  StepStats train_step(const Tensor& images, const Tensor& labels);
  // Mean loss and accuracy over the first `max_samples` samples of `data` (all when < 0), without
  // keeping activations, under the trainer's precision policy.
  EvalStats evaluate(const data::Dataset& data, int64_t max_samples = -1, int64_t batch_size = 500);

  // The full training state (see the header comment). load() checks that the checkpoint was
  // written by a trainer with the same model, precision, batch size and data seed.
  void save(const std::string& path) const;
  void load(const std::string& path);
  // Only the weights ("model.<parameter>" entries, every one required, shapes checked): to start
  // training or evaluate from weights written elsewhere, e.g. consolidated from the shards of a
  // sharded run. The optimizer, scaler, loader and step count are left as they are.
  void load_weights(const std::string& path);

  int64_t steps_done() const { return steps_; }
  // The gpt: the data are text windows (data/text_dataset.h), the loss is over every position.
  bool is_language_model() const { return options_.model.kind == "gpt"; }
  int64_t epoch() const { return loader_->position().epoch; }
  int64_t batches_per_epoch() const { return loader_->batches_per_epoch(); }
  Device device() const { return options_.device; }
  const TrainerOptions& options() const { return options_; }
  int64_t rank_batch_size() const { return options_.batch_size / options_.world_size; }
  nn::Sequential& model() { return *model_; }
  const nn::ParameterBuffer& parameters() const { return *buffer_; }
  optim::AdamW& optimizer() { return *optimizer_; }
  const optim::LossScaler& scaler() const { return scaler_; }

 private:
  TrainerOptions options_;
  std::shared_ptr<const data::Dataset> train_data_;
  std::unique_ptr<nn::Sequential> model_;
  std::unique_ptr<nn::ParameterBuffer> buffer_;
  std::unique_ptr<optim::AdamW> optimizer_;
  optim::LossScaler scaler_;
  std::unique_ptr<data::DataLoader> loader_;
  int64_t steps_ = 0;
};

}  // namespace gtl::train
