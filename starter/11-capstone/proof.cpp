// Lab 11, TODO 5: a plan's twin on in-process ranks, built from the core's pieces: the GPT's
// pipeline stages (nn::GPTStage), the process grid, the communicator, AdamW and, for ZeRO, the
// flat parameter (nn::FlatParameter) and the modules' hooks.
//
// The proof is the allocator and the trace: what this file keeps alive, and what it sends to
// whom, is measured on every rank and held against the plan. A schedule that keeps one
// micro-batch too many, a message sent twice, a gradient averaged in the wrong group: each shows
// up there, not in the loss.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "gtl/distributed/process_grid.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/flat_parameter.h"
#include "gtl/nn/gpt_stage.h"
#include "gtl/nn/precision.h"
#include "gtl/nn/vocab_parallel.h"
#include "gtl/ops/elementwise.h"
#include "gtl/optim/adamw.h"
#include "gtl/runtime/error.h"
#include "proof.h"

namespace lab11 {

namespace {

using gtl::DType;
using gtl::Tensor;
using gtl::dist::Communicator;
namespace nn = gtl::nn;

// Sequences [first, first + count) of the batch's ids (shape [count, T]) or of its targets
// (shape [count * T]), as the int64 tensor the GPT and the loss take.
[[maybe_unused]] Tensor rows(const std::vector<int64_t>& all, int64_t first, int64_t count,
                             int64_t t, bool flat) {
  Tensor out =
      flat ? Tensor::empty({count * t}, DType::Int64) : Tensor::empty({count, t}, DType::Int64);
  std::copy(all.begin() + first * t, all.begin() + (first + count) * t, out.data<int64_t>());
  return out;
}

nn::GPTConfig gpt_config(const ModelSpec& model, uint64_t seed, const Config& config) {
  nn::GPTConfig c;
  c.vocab = model.vocab;
  c.context = model.context;
  c.dim = model.dim;
  c.layers = model.layers;
  c.heads = model.heads;
  c.tie_head = model.tied_head;
  c.checkpoint = config.activation_checkpointing;
  c.seed = seed;
  return c;
}

class TwinRank final : public PlanRank {
 public:
  TwinRank(const ModelSpec& model, uint64_t seed, const Config& config, Communicator& world,
           float lr);
  float step(const ProofBatch& batch) override;
  std::vector<gtl::optim::ParamRef> parameters() const override {
    return stage_ != nullptr ? stage_->parameters() : std::vector<gtl::optim::ParamRef>{};
  }
  std::vector<gtl::optim::ParamRef> optimized() const override { return optimized_; }
  gtl::nn::Module& stage() override { return *stage_; }

 private:
  ModelSpec model_;
  Config config_;
  std::unique_ptr<gtl::dist::ProcessGrid> grid_;  // built by the constructor
  std::unique_ptr<nn::GPTStage> stage_;           // built by the constructor
  std::vector<gtl::optim::ParamRef> optimized_;   // what AdamW updates: set by the constructor
  // TODO(lab11) step 5: what this rank keeps between steps besides its stage.
  //   About 5 lines, 10 more for ZeRO-2 and -3 (with the helpers you define below).
  // END TODO(lab11)
};

TwinRank::TwinRank(const ModelSpec& model, uint64_t seed, const Config& config, Communicator& world,
                   float lr)
    : model_(model), config_(config) {
  // The process grid (r = (d pp + s) tp + t) and this rank's stage: stage s of the GPT, its layers
  // cut over the TP group when tp > 1, its stream cut by tokens too under SP (gpt_stage.h).
  grid_ = std::make_unique<gtl::dist::ProcessGrid>(world, config.tp, config.pp, config.dp);
  stage_ = std::make_unique<nn::GPTStage>(gpt_config(model, seed, config), grid_->pp_rank(),
                                          config.pp, &grid_->tp_group(), config.sequence_parallel);
  // Under bf16-mixed (F3) each parameter gets its bf16 compute copy, which the forward reads and
  // AdamW rewrites from the float32 value (the master) after each update; step() runs under
  // the bf16 policy. (Under ZeRO, F8's units hold the copy the layers read: yours to lay out.)
  if (config.precision == Precision::Bf16Mixed && config.zero_stage == 0) {
    nn::add_compute_copies(stage_->parameter_slots(), DType::BFloat16);
  }
  // TODO(lab11) step 5: this rank's groups and its optimizer (its stage and grid are built
  //   above).
  //   Spec: proof.h, make_plan_rank.
  //   Hint: list every parameter that more than one rank holds a copy of, and for each the
  //   ranks holding it and whether each computes its gradient from a different part of the
  //   work: each such set is a group whose gradients must be combined. Groups are collective to
  //   make (every rank of the world calls each split). Under ZeRO, the handout's
  //   F8 says which parameters share a unit, and under bf16-mixed what its buffers hold; ask of
  //   each copy what must come out the same on every rank holding one. Under ZeRO-2 and -3, F9
  //   says when a unit's whole buffers exist: the core's modules run your code around a
  //   block's passes. optimized_ is what AdamW updates. About 10 lines, 25 more for ZeRO-1, 30
  //   more for ZeRO-2 and -3.
  (void)lr;
  // END TODO(lab11)
}

// TODO(lab11) step 5: the helpers your members declare, if any.
// END TODO(lab11)

float TwinRank::step(const ProofBatch& batch) {
  const int64_t t = model_.context, mb = config_.micro_batch, m = config_.accumulation;
  GTL_CHECK(batch.sequences == mb * m * config_.dp &&
                static_cast<int64_t>(batch.ids.size()) == batch.sequences * t &&
                batch.targets.size() == batch.ids.size(),
            "PlanRank::step: expected " << mb * m * config_.dp << " sequences of " << t
                                        << " ids and targets, got " << batch.sequences
                                        << " sequences, " << batch.ids.size() << " ids, "
                                        << batch.targets.size() << " targets");
  // What step returns: on the last stage the DP rank's mean loss (proof.h), NaN elsewhere.
  float mean_loss = std::numeric_limits<float>::quiet_NaN();
  const nn::PrecisionScope precision(config_.precision == Precision::Bf16Mixed
                                         ? nn::PrecisionPolicy::bf16()
                                         : nn::PrecisionPolicy::fp32());
  // TODO(lab11) step 5: one training step of this rank.
  //   Spec: proof.h, PlanRank::step; the handout's TODO 5 says what is measured.
  //   Hint: write stage s's 1F1B order as three phases (lab 07): how many forwards run before its
  //   first backward, and whom each message goes to and comes from. Sends are rendezvous: two
  //   neighbours that send to each other at the same point must do it in one call. Then decide, for
  //   every tensor you make, which call it must not outlive and which call first needs it: the
  //   allocator sees each one. Under TP, what the last stage's logits are; under SP, what crosses
  //   between stages. Under ZeRO-1 (lab 06), after the pipeline: who averages which chunk, who
  //   updates it, and how the others' updates reach every rank. Under ZeRO-2 and -3, each
  //   backward's gradients leave their buffers before the next backward writes: what must a shard
  //   hold at the end of the step, and what is left to combine then? About 70 lines, 10 more for
  //   ZeRO-1, 15 more for ZeRO-2 and -3.
  (void)batch;
  // END TODO(lab11)
  return mean_loss;
}

}  // namespace

std::unique_ptr<PlanRank> make_plan_rank(const ModelSpec& model, uint64_t seed,
                                         const Config& config, Communicator& world, float lr) {
  check_config(model, config);
  GTL_CHECK(world.world_size() == config.dp * config.tp * config.pp,
            "make_plan_rank: a world of " << world.world_size() << " ranks for dp " << config.dp
                                          << " x tp " << config.tp << " x pp " << config.pp);
  return std::make_unique<TwinRank>(model, seed, config, world, lr);
}

}  // namespace lab11
