// Lab 06, sharded data parallelism: ZeRO-1, ZeRO-2 and FSDP (ZeRO-3), each proven by the bytes a
// rank holds and the bytes it moves.
//
// This header is part of the pristine lab (labs/06-sharded/include): do not edit it. Your files
// are in starter/06-sharded/, one per stage; the map from TODO to file, test and check is in the
// handout, labs/06-sharded/README.md. Everything runs on in-process ranks (gtl::dist::run_ranks)
// on the CPU, each rank with its own allocator, so a rank's memory statistics are exact.
//
// Why sharding: data-parallel training with AdamW keeps, per parameter, 4 bytes of weights, 4 of
// gradients and 8 of optimizer state (m and v) on EVERY rank: 16P bytes, whatever N. ZeRO keeps
// one copy of each, cut in N shards: stage 1 shards the optimizer state, stage 2 the gradients
// too, stage 3 (FSDP) the weights too, gathering each unit's weights just before it computes.
//
// The core's FlatParameter (gtl/nn/flat_parameter.h) holds the parameters of a model or unit in
// one flat buffer padded to a multiple of N, with a persistent shard per rank and full buffers
// you release and materialise. A materialised full gradient starts at zero, and this lab's
// backward writes gradients with GradMode::Overwrite (GradMode::Accumulate would add to those
// zeros): either way the padding, which no backward writes, stays zero.
//
// Aliasing in the core's collectives (communicator.h leaves it unsaid): reduce_scatter's output
// may be its input's chunk rank() and all_gather's input may be its output's chunk rank() (the
// in-place forms, which NCCL also allows); any other overlap between input and output is not
// supported.
//
// Each TODO's file must not use the core symbols that would answer it (TODO 1:
// gtl::nn::ShardLayout; the full list per TODO is in the handout): the grader reads the symbols of
// each student FILE and scores the TODO 0 when the file uses one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/nn/flat_parameter.h"
#include "gtl/nn/models.h"
#include "gtl/nn/module.h"
#include "gtl/optim/adamw.h"
#include "gtl/optim/loss_scaler.h"

namespace lab06 {

using gtl::Tensor;
using gtl::dist::Communicator;
using gtl::optim::ParamRef;

// ---- 1. Shard arithmetic (shard_math.cpp) -------------------------------------------------------
// A flat buffer of `numel` real elements is padded with zeros to the smallest multiple of
// world_size, so that it cuts into world_size equal shards: rank r owns elements
// [shard_offset(r), shard_offset(r) + shard_size). The padding sits at the tail only.
int64_t padded_numel(int64_t numel, int world_size);
int64_t shard_size(int64_t numel, int world_size);
int64_t shard_offset(int64_t numel, int world_size, int rank);
// How many elements of rank `rank`'s shard are real (not padding).
int64_t shard_real_numel(int64_t numel, int world_size, int rank);
// The rank whose shard holds element i of the padded buffer (0 <= i < padded_numel).
int shard_owner(int64_t i, int64_t numel, int world_size);

// ---- 2. ZeRO-1: sharded optimizer state (zero1.cpp) ---------------------------------------------
// `flat` holds the whole model, built with Options{.shard_grads = false}: full values, full
// gradients, and this rank's shard of the values (flat.shard_values()).
class Zero1 {
 public:
  // AdamW over this rank's shard only: its m and v, 8 bytes per REAL element of the shard (a
  // rank whose shard is all padding has no optimizer).
  Zero1(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options);
  // After backward: the gradient this rank's optimizer reads becomes the AVERAGE over ranks.
  void after_backward();
  // AdamW on the shard; afterwards every rank's full values are the whole updated model. With
  // after_backward, one step moves exactly DDP's bytes, without an all-reduce.
  void step();

 private:
  Communicator& comm_;
  gtl::nn::FlatParameter& flat_;
  std::unique_ptr<gtl::optim::AdamW> optimizer_;  // null when the shard is all padding
};

// ---- 3. ZeRO-2: sharded gradients too (zero2.cpp) -----------------------------------------------
// `flat` holds the whole model with a gradient shard (Options{.shard_grads = true}).
class Zero2 {
 public:
  // As Zero1's. From construction to the first backward, and between steps, a rank holds only
  // its shard of the gradients (flat.shard_grads()), never the full gradient.
  Zero2(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions options);
  // Called just before backward, which writes each parameter's gradient into its view of
  // flat.grads() (GradMode::Overwrite).
  void before_backward();
  // Called just after backward: the gradient the optimizer reads becomes the AVERAGE over ranks.
  void after_backward();
  // As Zero1::step.
  void step();

 private:
  Communicator& comm_;
  gtl::nn::FlatParameter& flat_;
  std::unique_ptr<gtl::optim::AdamW> optimizer_;
};

// ---- 4. and 5. FSDP / ZeRO-3 with prefetch (fsdp.cpp) -----------------------------------------
// One unit: a module of the model whose parameters live in their own FlatParameter (the harness
// makes one per child of the lab model that has parameters: the first Linear, each residual
// block, the LayerNorm and the last Linear).
struct Unit {
  gtl::nn::Module* module = nullptr;
  std::unique_ptr<gtl::nn::FlatParameter> flat;
};

class Fsdp {
 public:
  // Installs hooks on `model` that call the four functions below for the units' modules. From
  // construction on, between uses, a rank holds only the units' shards.
  // prefetch: 0 (gather just in time) or 1 (TODO 5: one unit ahead).
  Fsdp(Communicator& comm, gtl::nn::Module& model, std::vector<Unit>& units, int prefetch);

  // The optimizer's parameters: every unit's shard_param() (real elements only), unit order.
  std::vector<ParamRef> shard_params() const;

  // TODO 4. Called around unit u's forward and backward. What a rank may hold at each hook is
  // stated in the handout's TODO 4 (and in fsdp.cpp); after its backward the unit's optimizer
  // gradient is the AVERAGE over ranks (as DDP's). Every rank issues the same collectives in the
  // same (unit) order.
  void before_forward(int64_t u);
  void after_forward(int64_t u);
  void before_backward(int64_t u);
  void after_backward(int64_t u);
  // On return unit u's full values are present and hold every rank's shard. A gather that
  // prefetch(u) issued is waited for, never issued again.
  void gather(int64_t u);

  // TODO 5. Starts unit u's all-gather asynchronously and returns without waiting for it; the
  // gather's Work is in_flight(u) until gather(u) waits for it. Does nothing when u is out of
  // range or its values are already present or in flight. Where the hooks call it (prefetch 1)
  // is TODO 5's question.
  void prefetch(int64_t u);
  // Unit u's prefetch in flight, if any: the Work gather(u) waits for (TODO 5's own checks wait
  // on it too, so they do not need gather, TODO 4).
  const std::optional<gtl::dist::Work>& in_flight(int64_t u) const {
    return pending_.at(static_cast<std::size_t>(u));
  }

  int64_t num_units() const { return static_cast<int64_t>(units_.size()); }

 private:
  Communicator& comm_;
  std::vector<Unit>& units_;
  int prefetch_;
  std::map<const gtl::nn::Module*, int64_t> index_;      // unit module -> unit index
  std::vector<std::optional<gtl::dist::Work>> pending_;  // per unit: its prefetch in flight
  gtl::nn::HookHandle hooks_;
};

// ---- 6. Sharded checkpoint (sharded_checkpoint.cpp) ---------------------------------------------
// Each rank saves only what it owns, in its own file shard_file(dir, rank, N), a
// gtl::io::CheckpointFile written atomically: no rank ever holds the whole model. The entries the
// tests read by name (numbers as put_int scalars, tensors as tensors):
//   "world_size", "rank"            the layout the shards were cut for
//   "unit<u>.values"                 unit u's shard_values() (its padding included)
// and, under names that start with "optim." (yours to choose), whatever of the optimizer a resume
// needs to continue bit for bit: tensors as tensors, numbers as put_int or put_double scalars.
std::string shard_file(const std::string& dir, int rank,
                       int world_size);  // "<dir>/shard-1-of-4.ckpt"
void save_sharded(const std::string& dir, const Communicator& comm, const std::vector<Unit>& units,
                  const gtl::optim::AdamW& optimizer);
// The reverse, into the same layout (the same N: checks "world_size" and "rank" and throws
// gtl::Error naming both when they differ). A run resumed from it continues bit for bit.
void load_sharded(const std::string& dir, const Communicator& comm, std::vector<Unit>& units,
                  gtl::optim::AdamW& optimizer);
// Offline, one process: reads the N shard files of `dir` and writes to `path` the full weights as
// a single-process checkpoint: one entry "model.<parameter name>" per parameter of
// make_model(config), the names and shapes Trainer::save uses, padding dropped.
void consolidate(const std::string& dir, int world_size, const gtl::nn::ModelConfig& config,
                 const std::string& path);

// ---- 7. Skip and clip decisions that agree across ranks (sharded_clip.cpp) ----------------------
// Sharded, each rank unscales and clips only its own shard of the gradients. Left alone, rank 0
// would skip a step for an overflow rank 2 never saw, and each rank would clip by the norm of its
// own shard: the ranks' models would drift apart. Between scaler.unscale_(shard params) and
// scaler.step(): the scaler's found-inf flag (found_inf_flag(), float32 [1]; undefined on a rank
// whose unscale_ saw no parameter, which counts as a float32 [1] zero on the CPU, where this lab's
// scaler runs) is set (set_found_inf_flag) so that every rank's says "overflow" exactly when some
// rank's did. No-op when the scaler is disabled. Every rank calls it.
//
// The two calls of gtl::optim::LossScaler it uses, whose contract is copied here (in
// loss_scaler.h the comment above found_inf_flag gives this TODO's answer: leave it closed):
// clang-format off
//   const Tensor& found_inf_flag() const     the flag unscale_ wrote: float32 [1] on the gradients'
//                                            device, 1 when it saw an inf or NaN, else 0; undefined
//                                            before unscale_ or when unscale_ saw no parameter
//   void set_found_inf_flag(const Tensor&)   replaces it, only between unscale_ and step(): a
//                                            defined float32 tensor of one element; step() skips
//                                            the update when it is not 0
// clang-format on
void agree_found_inf(Communicator& comm, gtl::optim::LossScaler& scaler);
// Clips this rank's shard gradients (shard_params may be empty) by the GLOBAL norm (the L2 norm
// of all ranks' shards together, what one process clipping the whole gradient computes), with
// the coefficient min(max_norm / (norm + 1e-6), 1); returns that norm, the same on every rank.
float clip_sharded_grad_norm_(Communicator& comm, const std::vector<ParamRef>& shard_params,
                              float max_norm);

// ---- 8. bf16 compute copies under FSDP (fsdp_mixed_precision.cpp) -------------------------------
// FSDP's all-gathers are its largest traffic (TODO 4 counts them). Under mixed precision a unit
// computes on a bf16 COMPUTE copy of its weights (fp32 rounded to nearest even). What persists
// stays fp32: the value shards (the master weights AdamW updates), the gradient shards, m and v.
// Gradients are reduce-scattered in fp32 (PyTorch FSDP's MixedPrecision(param_dtype=bf16,
// reduce_dtype=fp32)): a sum of N bf16 gradients would round at every addition, and the fp32
// reduce-scatter moves only a third of a step's bytes.
//
// Unit `flat`'s full compute copy: bf16, [flat.padded_numel()], in a fresh tensor from the
// current allocator, equal bit for bit to the fp32 full values rounded to bf16. Its gather's
// bytes are graded by the communicator's all_gather counter against fp32 FSDP's gather of the
// same unit; while the copy lives the rank holds exactly 2 x padded_numel bytes more than its
// persistent state; the fp32 shard is left untouched. Every rank calls it.
Tensor gather_bf16_values(Communicator& comm, const gtl::nn::FlatParameter& flat);
// Bytes this rank sends in that all-gather on a ring (the communicator's all_gather counter).
int64_t bf16_gather_bytes_sent(const gtl::nn::FlatParameter& flat);

}  // namespace lab06
