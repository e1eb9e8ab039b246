// Lab 11, TODO 5: the proof. A plan is a claim about bytes and messages; this part runs a plan's
// twin (the same dp x tp x pp shape, a small GPT) on in-process ranks (gtl::dist::run_ranks) and
// checks the claim against what each rank's allocator and trace saw.
//
// This header is part of the pristine lab (labs/11-capstone/include): do not edit it. Your file
// is starter/11-capstone/proof.cpp; the handout's "TODO 5" says what is checked and how exactly.
//
// What runs here: dp x tp x pp ranks, with or without SP, any ZeRO stage, in float32 or
// bf16-mixed. The core has the pieces for that (nn::GPTStage, its tensor- and sequence-parallel
// layers and loss, the communicator, AdamW, nn::FlatParameter with its mixed-precision layout,
// the modules' hooks).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "capstone.h"
#include "gtl/distributed/communicator.h"
#include "gtl/nn/module.h"
#include "gtl/optim/param.h"

namespace lab11 {

// The sequences of one step: `sequences` = micro_batch x accumulation x dp of them, T = the
// model's context tokens each, row-major [sequences, T]; targets[i] is the token that follows
// ids[i] (the next-token loss, data/text_dataset.h). DP rank d trains on the d-th contiguous
// block of micro_batch x accumulation sequences, its micro-batches in order.
struct ProofBatch {
  int64_t sequences = 0;
  std::vector<int64_t> ids, targets;
};

// One rank of the twin, built by make_plan_rank.
class PlanRank {
 public:
  virtual ~PlanRank() = default;

  // 5. One training step on this rank: its DP rank's `accumulation` micro-batches through the
  // pipeline in 1F1B order, the gradients made those of the mean loss over ALL of the batch's
  // tokens, one AdamW step. Returns, on a rank of the last stage (each of its TP ranks), its DP
  // rank's mean loss (over its micro_batch x accumulation sequences), and NaN on every other
  // rank. Every rank of the world calls it with the same batch.
  virtual float step(const ProofBatch& batch) = 0;

  // This rank's parameters (its stage's; under TP its shards of them), by their names in the whole
  // model (nn::GPTStage).
  virtual std::vector<gtl::optim::ParamRef> parameters() const = 0;

  // What this rank's AdamW updates, with the gradients it updates them from: the stage's
  // parameters under ZeRO-0; under ZeRO the rank's shard of each unit of F8 that has real
  // elements on it (nn::FlatParameter::shard_param(), named by the unit's first parameter: the
  // name the ParamRef* constructor of FlatParameter takes).
  virtual std::vector<gtl::optim::ParamRef> optimized() const = 0;

  // Its stage (given: built by make_plan_rank): lab11_prove traces its modules for the timeline.
  virtual gtl::nn::Module& stage() = 0;
};

// 5. World rank r of config.dp x config.tp x config.pp ranks (r = (d pp + s) tp + t: DP rank d,
// stage s, TP rank t, the core's ProcessGrid, built for you): stage s of the core's GPT
// (ModelSpec, `seed`; every block checkpointed under activation_checkpointing; under tp > 1 TP
// rank t's shards of its layers, given: nn::GPTStage over the grid's TP group; under bf16-mixed
// step() under the bf16 policy, given, and at ZeRO-0 each parameter with its bf16 compute copy,
// given; under ZeRO the copy is the units' to hold: F8), and AdamW
// (learning rate `lr`, the core's other defaults) on its parameters; under ZeRO, the stage's
// units (the handout's F8) each an nn::FlatParameter over the DP group, and AdamW on this rank's
// shards of them; under ZeRO-2 and -3 each unit's whole gradient (and under ZeRO-3 its whole
// values) exist only while the handout's F9 says they do. Collective over `world` (every rank
// calls it). Throws gtl::Error (check_config; a world of another size than dp x tp x pp) before
// communicating.
//
// What the checks hold it to (handout, TODO 5): after each step every rank's parameters equal a
// single process's training on the whole batch (under TP their slices; within the stated
// tolerance), and every copy of a parameter (a tied table's two, a TP-whole parameter's tp)
// stays the same bits; at its peak, each rank's allocator holds exactly what one micro-batch on
// that stage holds, plus what 1F1B keeps of the others; the trace holds exactly the plan's
// traffic: the activations and their gradients between neighbouring stages, one message per
// micro-batch and direction, the TP group's all-reduces (the core's layers and loss issue them),
// and the gradient synchronisation, each tensor once, in the group that needs it; nothing
// else.
//
// The last stage holds a micro-batch's targets, logits, their gradient and its loss until the
// micro-batch's backward has finished, as the core's trainer does (docs/core.md, "Memory of a
// training step": the model of TODO 1 counts them); everything else a rank keeps is yours to
// decide, and is measured.
std::unique_ptr<PlanRank> make_plan_rank(const ModelSpec& model, uint64_t seed,
                                         const Config& config, gtl::dist::Communicator& world,
                                         float lr);

}  // namespace lab11
