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
  // SOLUTION(lab11) step 5
  std::unique_ptr<Communicator> tied_;  // the first and last stage of one pipeline
  std::unique_ptr<gtl::optim::AdamW> adamw_;
  std::vector<std::unique_ptr<nn::FlatParameter>> units_;  // ZeRO: F8's units
  // ZeRO-2/3: each block's unit by its module; the stage's others (a tied table, the rest).
  std::map<const gtl::nn::Module*, nn::FlatParameter*> block_units_;
  std::vector<nn::FlatParameter*> stage_units_;
  nn::FlatParameter* table_unit_ = nullptr;  // a tied table's, on the first and last stage
  gtl::nn::HookHandle hooks_;
  // ZeRO-2/3: one micro-batch's gradient of unit u, averaged over the DP group, added to the
  // shard. ZeRO-3: unit u's whole values, for one forward or backward (no-ops below ZeRO-3).
  void reduce_into_shard(nn::FlatParameter& u);
  void gather_values(nn::FlatParameter& u);
  void drop_values(nn::FlatParameter& u);
  // END SOLUTION(lab11)
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
  // SOLUTION(lab11) step 5
  const int s = grid_->pp_rank(), pp = config.pp;
  // The two copies of a tied table (stage 0's and the last stage's) are one parameter: their
  // gradients are summed between those two ranks of each pipeline, before DP averages them;
  // under TP each TP rank holds its own rows of both copies, so the pair is per TP rank too. (The
  // parameters every TP rank holds whole, LayerNorms and biases, get the same gradient on each:
  // nothing to combine.)
  const bool holds_table = model.tied_head && pp > 1 && (s == 0 || s == pp - 1);
  const int pipeline = grid_->dp_rank() * config.tp + grid_->tp_rank();
  tied_ = world.split(holds_table ? pipeline : -1, world.rank());
  gtl::optim::AdamWOptions options;
  options.lr = lr;
  if (config.zero_stage == 0) {
    optimized_ = stage_->parameters();
    adamw_ = std::make_unique<gtl::optim::AdamW>(optimized_, options);
    return;
  }
  // ZeRO (F8): each block a FlatParameter over the DP group; a tied table alone, so that its
  // two copies are cut, reduced and updated alike (in a shared unit, each copy's elements would
  // sit in other chunks, summed in another order: the copies would drift apart); the rest.
  // Under bf16-mixed each unit's full values are the bf16 copy the layers read, its float32
  // shard the master AdamW updates (F8): no float32 copy of the whole unit, and the all-gathers
  // carry bf16.
  nn::FlatParameter::Options flat;
  flat.shard_grads = config.zero_stage >= 2;
  if (config.precision == Precision::Bf16Mixed) flat.compute = DType::BFloat16;
  const int dp = config.dp, d = grid_->dp_rank();
  auto add_unit = [&](std::vector<nn::ParamRef*> params) {
    if (params.empty()) return;
    units_.push_back(std::make_unique<nn::FlatParameter>(params, params.front()->name,
                                                         gtl::Device::cpu(), dp, d, flat));
  };
  std::set<const nn::ParamRef*> placed;
  for (const auto& child : stage_->children()) {
    if (child->path().rfind("h.", 0) != 0) continue;
    const std::vector<nn::ParamRef*> block = child->parameter_slots();
    placed.insert(block.begin(), block.end());
    add_unit(block);
    block_units_[child.get()] = units_.back().get();
  }
  std::vector<nn::ParamRef*> table, rest;
  const nn::ParamRef* tied = stage_->tied_table();
  for (nn::ParamRef* p : stage_->parameter_slots()) {
    if (placed.count(p) > 0) continue;
    (tied != nullptr && p->name == tied->name ? table : rest).push_back(p);
  }
  add_unit(table);
  if (!table.empty()) table_unit_ = units_.back().get();
  add_unit(rest);
  for (const auto& u : units_) {
    if (std::optional<nn::ParamRef> shard = u->shard_param()) optimized_.push_back(*shard);
  }
  adamw_ = std::make_unique<gtl::optim::AdamW>(optimized_, options);
  if (config.zero_stage == 1) return;
  // ZeRO-2 (F9): no whole gradient between backwards. A block's buffer is made just before its
  // backward and reduce-scattered just after it; the other units' (the embeddings and the head,
  // the first and the last of the stage's work) live through the stage's whole backward. ZeRO-3:
  // the values too, gathered for each forward and backward and dropped after it.
  for (std::size_t u = block_units_.size(); u < units_.size(); ++u) {
    stage_units_.push_back(units_[u].get());
  }
  for (const auto& u : units_) {
    u->release_grads();
    if (config.zero_stage == 3) u->release_values();
  }
  auto unit_of = [this](gtl::nn::Module& m) {
    const auto b = block_units_.find(&m);
    return b == block_units_.end() ? nullptr : b->second;
  };
  gtl::nn::Hooks h;
  h.before_forward = [this, unit_of](gtl::nn::Module& m) {
    if (nn::FlatParameter* u = unit_of(m)) gather_values(*u);
  };
  h.after_forward = [this, unit_of](gtl::nn::Module& m) {
    if (nn::FlatParameter* u = unit_of(m)) drop_values(*u);
  };
  h.before_backward = [this, unit_of](gtl::nn::Module& m) {
    if (nn::FlatParameter* u = unit_of(m)) {
      gather_values(*u);
      u->materialize_grads();
    }
  };
  h.after_backward = [this, unit_of](gtl::nn::Module& m) {
    if (nn::FlatParameter* u = unit_of(m)) {
      reduce_into_shard(*u);
      drop_values(*u);
    }
  };
  hooks_ = stage_->add_hooks(std::move(h));
  // END SOLUTION(lab11)
}

// SOLUTION(lab11) step 5
void TwinRank::reduce_into_shard(nn::FlatParameter& u) {
  const Tensor mine = u.full_grads_chunk(grid_->dp_rank());
  grid_->dp_group().reduce_scatter(u.grads(), mine, gtl::dist::ReduceOp::Avg);  // in place
  gtl::ops::add_(u.shard_grads(), mine);
  u.release_grads();
}

void TwinRank::gather_values(nn::FlatParameter& u) {
  if (config_.zero_stage < 3) return;
  u.materialize_values();
  grid_->dp_group().all_gather(u.gather_input(), u.values());  // bf16: the master, rounded
}

void TwinRank::drop_values(nn::FlatParameter& u) {
  if (config_.zero_stage == 3) u.release_values();
}
// END SOLUTION(lab11)

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
  // SOLUTION(lab11) step 5
  const int s = grid_->pp_rank(), pp = config_.pp;
  const bool first = s == 0, last = s == pp - 1;
  const int64_t own = grid_->dp_rank() * mb * m;  // this DP rank's first sequence
  Communicator& pipe = grid_->pp_group();
  std::vector<nn::Context> ctx(static_cast<std::size_t>(m));
  int64_t forwarded = 0, backwarded = 0;
  if (last) mean_loss = 0;
  // What crosses between stages: [mb, T, D], or under SP this rank's T/k positions of it.
  const int64_t positions = config_.sequence_parallel ? t / config_.tp : t;
  auto activation = [&] { return Tensor::empty({mb, positions, model_.dim}); };
  // The input of the next micro-batch to forward: its ids on stage 0, else a buffer to receive
  // the previous stage's activation into.
  auto next_input = [&]() -> Tensor {
    return first ? rows(batch.ids, own + forwarded * mb, mb, t, false) : activation();
  };
  // Forward micro-batch `forwarded`; returns what goes to the next stage (nothing on the last,
  // which runs the loss and its backward at once: its 1F1B has no warm-up).
  auto forward = [&](const Tensor& x) {
    for (nn::FlatParameter* u : stage_units_) gather_values(*u);
    Tensor y = stage_->forward(x, ctx[static_cast<std::size_t>(forwarded++)]);
    for (nn::FlatParameter* u : stage_units_) drop_values(*u);
    return y;
  };
  // Backward of micro-batch `backwarded` from dy (dlogits on the last stage); returns dx. Under
  // ZeRO-2 and -3 each backward writes into fresh (zeroed) buffers, and the shards accumulate.
  const bool grad_shards = config_.zero_stage >= 2;  // ZeRO-2 and -3
  if (grad_shards) {
    for (const auto& u : units_) gtl::Tensor(u->shard_grads()).zero_();
  }
  auto backward = [&](const Tensor& dy) {
    const bool fresh = backwarded == 0 || grad_shards;
    const nn::GradMode mode = fresh ? nn::GradMode::Overwrite : nn::GradMode::Accumulate;
    for (nn::FlatParameter* u : stage_units_) {
      gather_values(*u);
      u->materialize_grads();
    }
    Tensor dx = stage_->backward(ctx[static_cast<std::size_t>(backwarded++)], dy, mode);
    for (nn::FlatParameter* u : stage_units_) {
      reduce_into_shard(*u);
      drop_values(*u);
    }
    return dx;
  };
  // The last stage: forward, loss (mean over the micro-batch; 1/m makes the sum over m the DP
  // rank's mean), backward, with the targets, logits, dlogits and loss held throughout.
  auto last_step = [&](const Tensor& x) {
    const Tensor targets = rows(batch.targets, own + forwarded * mb, mb, t, true);
    const Tensor logits = forward(x);  // under TP this rank's columns of the vocabulary
    nn::Context loss_ctx;
    Tensor l, dlogits;
    if (config_.tp > 1) {
      const nn::VocabParallelCrossEntropy loss(grid_->tp_group());
      l = loss.forward(logits, targets, loss_ctx);
      dlogits = loss.backward(loss_ctx, 1.f / static_cast<float>(m));
    } else {
      const nn::CrossEntropyLoss loss;
      l = loss.forward(logits, targets, loss_ctx);
      dlogits = loss.backward(loss_ctx, 1.f / static_cast<float>(m));
    }
    mean_loss += l.item();
    return backward(dlogits);
  };
  const int64_t warmup = last ? 0 : std::min<int64_t>(pp - s - 1, m);
  for (int64_t i = 0; i < warmup; ++i) {
    Tensor x = next_input();
    if (!first) pipe.recv(x, s - 1);
    pipe.send(forward(x), s + 1);
  }
  Tensor x;
  if (forwarded < m) {
    x = next_input();
    if (!first) pipe.recv(x, s - 1);
  }
  while (forwarded < m) {  // steady state: one forward, one backward
    Tensor dx;
    if (last) {
      dx = last_step(x);
    } else {
      Tensor dy;
      {
        const Tensor y = forward(x);
        dy = activation();  // after the forward, whose peak it would otherwise add to
        pipe.send_recv(y, s + 1, dy, s + 1);
      }
      dx = backward(dy);
    }
    x = Tensor();
    if (forwarded < m) {
      x = next_input();
      if (!first) pipe.send_recv(dx, s - 1, x, s - 1);
    } else if (!first) {
      pipe.send(dx, s - 1);
    }
  }
  while (backwarded < m) {  // cool-down: the warm-up's micro-batches
    Tensor dy = activation();
    pipe.recv(dy, s + 1);
    const Tensor dx = backward(dy);
    if (!first) pipe.send(dx, s - 1);
  }
  // The gradients of the DP rank's mean loss: the tied table's two halves summed, then every
  // gradient averaged over the DP ranks (equal micro-batches: the mean of means is the mean).
  // ZeRO-2/3 averaged them already: the table's two shards (cut alike) are summed instead.
  if (const gtl::optim::ParamRef* table = stage_->tied_table(); table != nullptr) {
    tied_->all_reduce(grad_shards ? table_unit_->shard_grads() : table->grad,
                      gtl::dist::ReduceOp::Sum);
  }
  // ZeRO-1: each rank averages and updates its chunk, then every chunk is gathered (ZeRO-2 too;
  // ZeRO-3 gathers the values it needs before its next pass).
  Communicator& dp = grid_->dp_group();
  const int zero = config_.zero_stage;
  if (zero == 0 && config_.dp > 1) {
    for (const gtl::optim::ParamRef& p : stage_->parameters()) {
      dp.all_reduce(p.grad, gtl::dist::ReduceOp::Avg);
    }
  }
  if (zero == 1) {
    for (const auto& u : units_) {
      dp.reduce_scatter(u->grads(), u->full_grads_chunk(grid_->dp_rank()),
                        gtl::dist::ReduceOp::Avg);
    }
  }
  adamw_->step();
  if (zero == 1 || zero == 2) {
    for (const auto& u : units_) dp.all_gather(u->gather_input(), u->values());
  }
  if (last) mean_loss /= static_cast<float>(m);
  // END SOLUTION(lab11)
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
