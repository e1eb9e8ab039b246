// The inputs of TODO 5's checks, shared with the course's check of the reference model
// (judge/reference_anchor_test.cpp): the twins' shapes (fixed, and drawn from the grading seed),
// their batches, and what the core's GPTStage alone allocates on each stage, from which the tests
// derive each rank's share exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "capstone.h"
#include "gtl/distributed/in_process.h"
#include "gtl/distributed/trace.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/flat_parameter.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/gpt_stage.h"
#include "gtl/nn/precision.h"
#include "gtl/nn/vocab_parallel.h"
#include "gtl/optim/adamw.h"
#include "gtl_test_seed.h"
#include "nn/gpt_test_util.h"
#include "nn/tensor_parallel_slice.h"
#include "proof.h"

namespace lab11_proof_cases {

using namespace gtl;
using lab11::Config;
using lab11::ModelSpec;
using lab11::ProofBatch;

inline constexpr float kLr = 1e-2f;

struct ProofCase {
  ModelSpec model;
  Config config;
  uint64_t seed = 1;
  std::string name() const {
    return lab11::describe(model) + "; " + lab11::describe(config) + "; seed " +
           std::to_string(seed);
  }
};

inline ProofCase make_case(ModelSpec model, int dp, int pp, int64_t mb, int64_t m, bool checkpoint,
                           uint64_t seed, int zero = 0, int tp = 1, bool sp = false) {
  ProofCase c;
  c.config.sequence_parallel = sp;
  c.config.zero_stage = zero;
  c.model = model;
  c.config.dp = dp;
  c.config.tp = tp;
  c.config.pp = pp;
  c.config.micro_batch = mb;
  c.config.accumulation = m;
  c.config.activation_checkpointing = checkpoint;
  c.seed = seed;
  return c;
}

// Fixed: m > pp and m < pp, both kinds of head, checkpointing, a world of 8, pp = 1 with
// accumulation (DP alone), dp = 1 (a pipeline alone); ZeRO-1 over 3 DP ranks (shards with
// padding) with a tied table across 2 stages, and over 2 with checkpointing; ZeRO-2 with a tied
// table across 2 stages and m > pp, and with one stage holding both of its ends, checkpointed;
// ZeRO-3 likewise, over 3 and 2 DP ranks; tensor parallelism: 4 TP ranks by 2 stages with m > pp,
// 2 TP by 2 DP ranks checkpointed with an untied head and a model whose peak is attention's, 2 TP
// by 2 DP by 2 stages under ZeRO-2 with a tied table across the stages, 4 TP by 2 DP under
// ZeRO-3; sequence parallelism: 4 TP ranks by 2 stages, 2 TP by 2 DP checkpointed under ZeRO-1
// with the attention-bound model, 2 TP by 2 DP by 2 stages under ZeRO-3 checkpointed;
// bf16-mixed: 2 DP by 2 stages with m = pp (a backward that accumulates with a micro-batch fewer
// held), 2 TP by 2 DP with SP checkpointed, 4 TP by 2 stages; under ZeRO-1 over 3 DP ranks with a
// tied table across 2 stages, ZeRO-2 over 2 TP by 2 DP with SP checkpointed, ZeRO-3 over 2 DP by
// 2 stages with a tied table. Then three drawn from the seed (tp from 1, 2, 4, SP on half of
// those it can cut, bf16 on half; at most 8 ranks).
inline std::vector<ProofCase> proof_cases(const std::string& test) {
  const ModelSpec tied{4, 16, 2, 29, 8, true}, untied{4, 16, 4, 23, 8, false};
  const ModelSpec wide{4, 16, 4, 32, 8, true}, attention_bound{2, 8, 2, 18, 16, false};
  std::vector<ProofCase> out = {
      make_case(tied, 2, 2, 2, 3, false, 1),
      make_case(untied, 1, 4, 1, 2, false, 2),
      make_case(tied, 2, 4, 1, 5, true, 3),
      make_case(untied, 2, 1, 2, 2, true, 4),
      make_case(tied, 1, 4, 2, 6, false, 5),
      make_case(tied, 1, 1, 1, 1, false, 6),
      make_case(tied, 3, 2, 1, 3, false, 7, 1),
      make_case(untied, 2, 2, 2, 1, true, 8, 1),
      make_case(tied, 2, 2, 1, 3, false, 9, 2),
      make_case(tied, 3, 1, 1, 2, true, 10, 2),
      make_case(tied, 3, 2, 1, 3, true, 11, 3),
      make_case(untied, 2, 1, 2, 2, false, 12, 3),
      make_case(wide, 1, 2, 1, 3, false, 13, 0, 4),
      make_case(attention_bound, 2, 1, 2, 2, true, 14, 0, 2),
      make_case(wide, 2, 2, 1, 3, true, 15, 2, 2),
      make_case(wide, 2, 1, 1, 2, false, 16, 3, 4),
      make_case(wide, 1, 2, 1, 3, false, 17, 0, 4, true),
      make_case(attention_bound, 2, 1, 2, 2, true, 18, 1, 2, true),
      make_case(wide, 2, 2, 1, 3, true, 19, 3, 2, true),
      make_case(tied, 2, 2, 2, 2, false, 20),
      make_case(attention_bound, 2, 1, 2, 2, true, 21, 0, 2, true),
      make_case(wide, 1, 2, 1, 3, false, 22, 0, 4),
      make_case(tied, 3, 2, 1, 3, false, 23, 1),
      make_case(wide, 2, 1, 1, 2, true, 24, 2, 2, true),
      make_case(tied, 2, 2, 2, 3, false, 25, 3),
  };
  for (std::size_t i = out.size() - 6; i < out.size(); ++i) {
    out[i].config.precision = lab11::Precision::Bf16Mixed;
  }
  std::mt19937_64 g = gtl::test_seed::generator(test);
  using gtl::test_seed::draw;
  for (int i = 0; i < 3; ++i) {
    ModelSpec model;
    const int pp = static_cast<int>(1 << draw(g, 0, 2));
    const int tp = std::min(static_cast<int>(1 << draw(g, 0, 2)), 8 / pp);
    model.layers = pp * draw(g, 1, 2);
    model.heads = tp * draw(g, 1, 4 / tp + (tp == 4 ? 1 : 0));
    model.dim = model.heads * 4 * draw(g, 1, 3);
    model.vocab = tp * draw(g, (8 + tp - 1) / tp, 48 / tp);
    model.context = draw(g, 2, 12);
    model.tied_head = draw(g, 0, 1) == 1;
    const int dp = static_cast<int>(draw(g, 1, std::min(3, 8 / (tp * pp))));
    out.push_back(make_case(model, dp, pp, draw(g, 1, 3), draw(g, 1, 6), draw(g, 0, 1) == 1,
                            static_cast<uint64_t>(draw(g, 1, 1000)),
                            static_cast<int>(draw(g, 0, 3)), tp));
    out.back().config.sequence_parallel = tp > 1 && model.context % tp == 0 && draw(g, 0, 1) == 1;
    if (draw(g, 0, 1) == 1) {
      out.back().config.precision = lab11::Precision::Bf16Mixed;
    }
  }
  return out;
}

inline ProofBatch make_batch(const ProofCase& c, uint64_t salt) {
  std::mt19937_64 rng(c.seed * 7919 + salt);
  ProofBatch b;
  b.sequences = c.config.micro_batch * c.config.accumulation * c.config.dp;
  const auto v = static_cast<uint64_t>(c.model.vocab);
  for (int64_t i = 0; i < b.sequences * c.model.context; ++i) {
    b.ids.push_back(static_cast<int64_t>(rng() % v));
    b.targets.push_back(static_cast<int64_t>(rng() % v));
  }
  return b;
}

inline bool is_bf16(const ProofCase& c) {
  return c.config.precision == lab11::Precision::Bf16Mixed;
}

inline nn::GPTConfig gpt_config(const ProofCase& c) {
  nn::GPTConfig g;
  g.vocab = c.model.vocab;
  g.context = c.model.context;
  g.dim = c.model.dim;
  g.layers = c.model.layers;
  g.heads = c.model.heads;
  g.tie_head = c.model.tied_head;
  g.checkpoint = c.config.activation_checkpointing;
  g.seed = c.seed;
  return g;
}

// World rank r = (d pp + s) tp + t (the core's ProcessGrid): its stage, DP rank and TP rank.
struct Position {
  int stage = 0, dp_rank = 0, tp_rank = 0;
};
inline Position position(const ProofCase& c, int r) {
  const int tp = c.config.tp, pp = c.config.pp;
  return {(r / tp) % pp, r / (tp * pp), r % tp};
}

// Stage s on TP rank t, built alone: its layers cut for a TP group of the case's size (the
// communicators of one, which building does not use to communicate).
struct StageAlone {
  std::vector<std::unique_ptr<dist::Communicator>> group;
  std::unique_ptr<nn::GPTStage> stage;
};
inline StageAlone stage_alone(const ProofCase& c, int s, int t) {
  StageAlone a;
  a.group = dist::make_in_process_world(c.config.tp);
  a.stage = std::make_unique<nn::GPTStage>(gpt_config(c), s, c.config.pp,
                                           a.group[static_cast<std::size_t>(t)].get(),
                                           c.config.sequence_parallel);
  return a;
}

// ---- one micro-batch on one stage, for proof-memory -------------------------------------------
// What the core's GPTStage alone allocates on stage s: its parameters, gradients and AdamW state
// (built), the peak of one micro-batch's forward and backward beyond that (the last stage with
// its targets, loss, logits and dlogits held through the backward; another stage with the
// gradient it receives), and what one micro-batch's forward leaves held (its input included: the
// ids on stage 0, the received activation elsewhere; the output sent on is not kept). Under
// bf16-mixed at ZeRO-0 and -1 also the peak of a micro-batch whose backward accumulates into the
// gradients (its bf16 weight gradients are widened first); in float32 the two are the same, and
// under ZeRO-2 and -3 every backward overwrites fresh buffers (F9).
struct StagePieces {
  int64_t built = 0, one_micro_batch = 0, held = 0, accumulating = 0;
};

// ---- ZeRO (F8): a stage's units, each a FlatParameter ------------------------------------------
//
// Each block; a tied table two stages hold (GPTStage::tied_table), alone, so that both copies are
// cut, reduced and updated alike; the rest of the stage. Each unit's parameters in the stage's
// order (the order a FlatParameter packs them in).
inline std::vector<std::vector<nn::ParamRef*>> unit_slots(nn::GPTStage& stage) {
  std::vector<std::vector<nn::ParamRef*>> units;
  for (const auto& child : stage.children()) {
    if (child->path().rfind("h.", 0) == 0) units.push_back(child->parameter_slots());
  }
  std::set<std::string> placed;
  for (const auto& u : units) {
    for (const nn::ParamRef* p : u) placed.insert(p->name);
  }
  std::vector<nn::ParamRef*> table, rest;
  const nn::ParamRef* tied = stage.tied_table();
  for (nn::ParamRef* p : stage.parameter_slots()) {
    if (placed.count(p->name) > 0) continue;
    (tied != nullptr && p->name == tied->name ? table : rest).push_back(p);
  }
  for (auto* u : {&table, &rest}) {
    if (!u->empty()) units.push_back(*u);
  }
  return units;
}

inline std::vector<std::vector<std::string>> unit_parameters(nn::GPTStage& stage) {
  std::vector<std::vector<std::string>> names;
  for (const std::vector<nn::ParamRef*>& u : unit_slots(stage)) {
    names.emplace_back();
    for (const nn::ParamRef* p : u) names.back().push_back(p->name);
  }
  return names;
}

// Wraps the stage's units in FlatParameters for DP rank d of dp (ZeRO-1: no gradient shard;
// ZeRO-2 and -3: shard_grads; under bf16-mixed the full values bf16, the shards the masters).
inline std::vector<std::unique_ptr<nn::FlatParameter>> zero_units(nn::GPTStage& stage, int dp,
                                                                  int d, bool shard_grads,
                                                                  DType compute) {
  nn::FlatParameter::Options options;
  options.shard_grads = shard_grads;
  options.compute = compute;
  std::vector<std::unique_ptr<nn::FlatParameter>> units;
  for (const std::vector<nn::ParamRef*>& u : unit_slots(stage)) {
    units.push_back(
        std::make_unique<nn::FlatParameter>(u, u.front()->name, Device::cpu(), dp, d, options));
  }
  return units;
}

// What DP rank d keeps of stage s after construction: parameters, gradients and AdamW's state
// (under ZeRO the units' padded buffers that persist, its shards and AdamW over their real
// elements), then one micro-batch's peak beyond it and what a forward leaves held. Under TP one
// rank of the group (`tp`, whose other ranks run the same), its loss the vocabulary-parallel one.
inline StagePieces measure_stage(const ProofCase& c, int s, int dp_rank, dist::Communicator* tp,
                                 Allocator* alloc) {
  const int pp = c.config.pp, zero = c.config.zero_stage;
  const int64_t mb = c.config.micro_batch, t = c.model.context, d = c.model.dim;
  const nn::PrecisionScope precision(is_bf16(c) ? nn::PrecisionPolicy::bf16()
                                                : nn::PrecisionPolicy::fp32());
  StagePieces p;
  nn::GPTStage stage(gpt_config(c), s, pp, tp, c.config.sequence_parallel);
  // F3: the bf16 compute copy the forward reads; the values are AdamW's masters. (Under ZeRO the
  // units' full values are that copy: F8.)
  if (is_bf16(c) && zero == 0) nn::add_compute_copies(stage.parameter_slots(), DType::BFloat16);
  // The stream between stages: [mb, T, D], or this rank's [mb, T/k, D] under SP.
  const int64_t rows = c.config.sequence_parallel ? t / c.config.tp : t;
  std::vector<std::unique_ptr<nn::FlatParameter>> units;
  std::vector<nn::ParamRef> updated = stage.parameters();
  if (zero >= 1) {
    units = zero_units(stage, c.config.dp, dp_rank, zero >= 2,
                       is_bf16(c) ? DType::BFloat16 : DType::Float32);
    updated.clear();
    for (const auto& u : units) {
      if (zero >= 2) u->release_grads();
      if (zero == 3) u->release_values();
      if (const std::optional<nn::ParamRef> shard = u->shard_param()) updated.push_back(*shard);
    }
  }
  optim::AdamW adamw(updated);
  // ZeRO-2/3 (F9): a block's full gradient buffer lives through its backward, the other units'
  // (F8: a tied table's, the rest's) through the stage's; ZeRO-3's full values likewise, for
  // each forward and each backward (zeroed here: only their bytes matter). The blocks' units
  // come first.
  std::map<const nn::Module*, nn::FlatParameter*> block_unit;
  std::vector<nn::FlatParameter*> stage_units;
  if (zero >= 2) {
    std::size_t u = 0;
    for (const auto& child : stage.children()) {
      if (child->path().rfind("h.", 0) == 0) block_unit[child.get()] = units[u++].get();
    }
    for (; u < units.size(); ++u) stage_units.push_back(units[u].get());
  }
  auto unit_of = [&](nn::Module& m) {
    const auto b = block_unit.find(&m);
    return b == block_unit.end() ? nullptr : b->second;
  };
  auto gather = [&](nn::FlatParameter& u) {
    if (zero < 3) return;
    u.materialize_values();
    Tensor(u.values()).zero_();
  };
  auto drop = [&](nn::FlatParameter& u) {
    if (zero == 3) u.release_values();
  };
  nn::Hooks windows;
  windows.before_forward = [&](nn::Module& m) {
    if (nn::FlatParameter* u = unit_of(m)) gather(*u);
  };
  windows.after_forward = [&](nn::Module& m) {
    if (nn::FlatParameter* u = unit_of(m)) drop(*u);
  };
  windows.before_backward = [&](nn::Module& m) {
    if (nn::FlatParameter* u = unit_of(m)) {
      gather(*u);
      u->materialize_grads();
    }
  };
  windows.after_backward = [&](nn::Module& m) {
    if (nn::FlatParameter* u = unit_of(m)) {
      u->release_grads();
      drop(*u);
    }
  };
  const nn::HookHandle hooks = stage.add_hooks(windows);
  auto forward = [&](const Tensor& x, nn::Context& ctx) {
    for (nn::FlatParameter* u : stage_units) gather(*u);
    Tensor y = stage.forward(x, ctx);
    for (nn::FlatParameter* u : stage_units) drop(*u);
    return y;
  };
  auto backward = [&](nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
    for (nn::FlatParameter* u : stage_units) {
      gather(*u);
      u->materialize_grads();
    }
    stage.backward(ctx, dy, mode);
    for (nn::FlatParameter* u : stage_units) {
      u->release_grads();
      drop(*u);
    }
  };
  p.built = alloc->stats().allocated_bytes;
  const ProofBatch b = make_batch(c, 1);
  const std::vector<int64_t> ids(b.ids.begin(), b.ids.begin() + mb * t);
  const std::vector<int64_t> targets(b.targets.begin(), b.targets.begin() + mb * t);
  auto input = [&] {
    return s == 0 ? gtl::testing::ids_tensor(ids, {mb, t}) : Tensor::zeros({mb, rows, d});
  };
  {  // what one forward leaves held
    nn::Context ctx;
    const int64_t before = alloc->stats().allocated_bytes;
    { const Tensor y = forward(input(), ctx); }
    p.held = alloc->stats().allocated_bytes - before;
  }
  auto micro_batch = [&](nn::GradMode mode) {
    alloc->reset_peak_stats();
    nn::Context ctx;
    if (s == pp - 1) {
      const Tensor tg = gtl::testing::ids_tensor(targets, {mb * t});
      const Tensor logits = forward(input(), ctx);
      nn::Context loss_ctx;
      Tensor l, dlogits;
      if (tp != nullptr) {
        const nn::VocabParallelCrossEntropy loss(*tp);
        l = loss.forward(logits, tg, loss_ctx);
        dlogits = loss.backward(loss_ctx);
      } else {
        const nn::CrossEntropyLoss loss;
        l = loss.forward(logits, tg, loss_ctx);
        dlogits = loss.backward(loss_ctx);
      }
      backward(ctx, dlogits, mode);
    } else {
      { const Tensor y = forward(input(), ctx); }
      const Tensor dy = Tensor::zeros({mb, rows, d});
      backward(ctx, dy, mode);
    }
    return alloc->stats().peak_allocated_bytes - p.built;
  };
  p.one_micro_batch = micro_batch(nn::GradMode::Overwrite);
  p.accumulating =
      is_bf16(c) && zero <= 1 ? micro_batch(nn::GradMode::Accumulate) : p.one_micro_batch;
  return p;
}

// The same for TP rank t of stage s, its group's ranks run side by side.
inline StagePieces stage_pieces(const ProofCase& c, int s, int dp_rank, int t = 0) {
  const int k = c.config.tp;
  std::vector<std::shared_ptr<Allocator>> allocs;
  for (int r = 0; r < k; ++r) allocs.push_back(make_cpu_caching_allocator());
  if (k == 1) {
    AllocatorScope scope(allocs[0]);
    return measure_stage(c, s, dp_rank, nullptr, allocs[0].get());
  }
  std::vector<StagePieces> pieces(static_cast<std::size_t>(k));
  dist::RunOptions options;
  options.allocators = allocs;
  options.timeout = std::chrono::seconds(30);
  dist::run_ranks(
      k,
      [&](dist::Communicator& group) {
        const auto r = static_cast<std::size_t>(group.rank());
        pieces[r] = measure_stage(c, s, dp_rank, &group, allocs[r].get());
      },
      options);
  return pieces[static_cast<std::size_t>(t)];
}

// Rank peak of stage s: what it built, one micro-batch's peak there, and the saved bytes of each
// other micro-batch 1F1B holds on it (min(pp - s, m) in all). Under ZeRO-0 and -1 the step's
// later backwards accumulate into the gradients, the first of them with min(pp - s, m - 1)
// micro-batches held (under ZeRO-2 and -3 each backward writes fresh buffers).
inline int64_t stage_share(const ProofCase& c, const StagePieces& p, int s) {
  const int64_t m = c.config.accumulation, in_flight = std::min<int64_t>(c.config.pp - s, m);
  const int64_t first = p.built + p.one_micro_batch + (in_flight - 1) * p.held;
  if (c.config.zero_stage >= 2 || m == 1) return first;
  return std::max(first, p.built + p.accumulating + (std::min(in_flight, m - 1) - 1) * p.held);
}

// The stage's parameter count on one TP rank (its gradient's elements), from the core's GPTStage.
inline int64_t stage_parameter_count(const ProofCase& c, int s) {
  const std::shared_ptr<Allocator> scratch = make_cpu_caching_allocator();
  AllocatorScope scope(scratch);
  const StageAlone a = stage_alone(c, s, 0);
  int64_t n = 0;
  for (const nn::ParamRef& p : a.stage->parameters()) n += p.value.numel();
  return n;
}

// Under ZeRO the elements of the stage's units padded to a multiple of dp (F8): the bytes each
// unit's reduce-scatter and all-gather carry, / 4.
inline int64_t stage_padded_count(const ProofCase& c, int s) {
  const std::shared_ptr<Allocator> scratch = make_cpu_caching_allocator();
  AllocatorScope scope(scratch);
  const StageAlone a = stage_alone(c, s, 0);
  std::map<std::string, int64_t> numel;
  for (const nn::ParamRef& p : a.stage->parameters()) numel[p.name] = p.value.numel();
  int64_t n = 0;
  for (const std::vector<std::string>& unit : unit_parameters(*a.stage)) {
    int64_t u = 0;
    for (const std::string& name : unit) u += numel.at(name);
    n += nn::ShardLayout(u, c.config.dp).padded_numel();
  }
  return n;
}

// ---- proof-loss: one process training the core's GPT on each whole batch --------------------
struct OneProcess {
  float loss[2] = {0, 0};
  std::map<std::string, std::vector<float>> grads[2];  // by name, after each step's backward
};

inline OneProcess one_process(const ProofCase& c) {
  const std::shared_ptr<Allocator> scratch = make_cpu_caching_allocator();
  AllocatorScope scope(scratch);
  const nn::PrecisionScope precision(is_bf16(c) ? nn::PrecisionPolicy::bf16()
                                                : nn::PrecisionPolicy::fp32());
  nn::GPT gpt(gpt_config(c));
  // F3: the bf16 compute copies the forward reads, rewritten by AdamW.
  if (is_bf16(c)) nn::add_compute_copies(gpt.parameter_slots(), DType::BFloat16);
  optim::AdamWOptions options;
  options.lr = kLr;
  optim::AdamW adamw(gpt.parameters(), options);
  OneProcess out;
  for (int step = 0; step < 2; ++step) {
    const ProofBatch b = make_batch(c, static_cast<uint64_t>(step + 1));
    const Tensor ids = gtl::testing::ids_tensor(b.ids, {b.sequences, c.model.context});
    const Tensor targets = gtl::testing::ids_tensor(b.targets, {b.sequences * c.model.context});
    const nn::CrossEntropyLoss loss;
    nn::Context ctx, loss_ctx;
    const Tensor logits = gpt.forward(ids, ctx);
    out.loss[step] = loss.forward(logits, targets, loss_ctx).item();
    gpt.backward(ctx, loss.backward(loss_ctx));
    for (const nn::ParamRef& p : gpt.parameters()) out.grads[step][p.name] = p.grad.to_vector();
    adamw.step();
  }
  return out;
}

// The bars of proof-loss (handout, "Tolerances"): the loss of step 1 and of step 2 (relative),
// every gradient of step 1 and of step 2 (relative L2).
inline constexpr double kLossBar[2] = {1e-5, 1e-4};
inline constexpr double kGradientBar[2] = {1e-5, 1e-2};
// Under bf16-mixed (the handout derives both): the losses of both steps, the gradients of step 1;
// step 2's are not compared (AdamW turns bf16's rounding into a different first update).
inline constexpr double kBf16LossBar[2] = {1e-2, 5e-2};
inline constexpr double kBf16GradientBar = 0.3;
inline double loss_bar(const ProofCase& c, int step) {
  return is_bf16(c) ? kBf16LossBar[step] : kLossBar[step];
}
inline bool compares_gradients(const ProofCase& c, int step) {
  return !is_bf16(c) || step == 0;
}
inline double gradient_bar(const ProofCase& c, int step) {
  return is_bf16(c) ? kBf16GradientBar : kGradientBar[step];
}

// What a rank's optimizer must see after a step's backward (PlanRank::optimized()): under ZeRO-0
// every parameter of its stage, its whole gradient; under ZeRO a rank averages and updates only
// its own chunk of each unit (F8), so each of its shards (named by its unit's first parameter)
// with the same elements of one process's gradients (the unit's concatenated in its order, the
// padding left out). A unit whose chunk on the rank is all padding has no shard there.
struct OwnedGradient {
  std::string first;  // the parameter, or the unit's first parameter: the shard's name
  std::string unit;   // "h.2.attn.qkv.weight", or F8's "block h.2", "the tied table wte.weight"
  std::vector<float> want;
  // Under ZeRO the chunk's share of its whole unit's gradient norm, |unit|_2 sqrt(n / units's n)
  // (0 under ZeRO-0): what a chunk of n elements would hold if the unit's were spread evenly.
  double share = 0;
};

// The error of a rank's gradient (handout, "Tolerances"): |got - want|_2 relative to the larger
// of |want|_2 and the chunk's share of its unit's norm. A chunk of a few elements that the
// unit's cut happens to leave small (a bias's tail, a corner of a LayerNorm) is measured on the
// unit's scale, the one its rounding errors have; every chunk of a unit together holds its whole
// norm, so some chunk of it is at least its share and is held to a plain relative bar.
inline double gradient_error(const std::vector<float>& got, const OwnedGradient& u) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < u.want.size(); ++i) {
    num += (double(got[i]) - u.want[i]) * (double(got[i]) - u.want[i]);
    den += double(u.want[i]) * u.want[i];
  }
  const double scale = std::max(std::sqrt(den), u.share);
  return scale > 0 ? std::sqrt(num) / scale : std::sqrt(num);
}
inline std::string unit_name(const nn::GPTStage& stage, const std::vector<std::string>& unit) {
  const std::string& first = unit.front();
  if (first.rfind("h.", 0) == 0) return "block " + first.substr(0, first.find('.', 2));
  const nn::ParamRef* table = stage.tied_table();
  if (table != nullptr && unit.size() == 1 && first == table->name) {
    return "the tied table " + first;
  }
  std::string rest = "the rest (";
  for (std::size_t i = 0; i < unit.size(); ++i) rest += (i > 0 ? ", " : "") + unit[i];
  return rest + ")";
}

// TP rank t's slice of a whole parameter's values (common/tests/nn/tensor_parallel_slice.h).
inline std::vector<float> tp_slice(const ProofCase& c, const std::string& name,
                                   const std::vector<float>& whole, int t) {
  return gtl::testing::tp_slice(name, whole, c.model.dim, c.config.tp, t);
}

inline std::vector<OwnedGradient> owned_gradients(
    const ProofCase& c, int s, int dp_rank, const std::map<std::string, std::vector<float>>& want,
    int tp_rank = 0) {
  const std::shared_ptr<Allocator> scratch = make_cpu_caching_allocator();
  AllocatorScope scope(scratch);
  const StageAlone a = stage_alone(c, s, tp_rank);
  const nn::GPTStage& stage = *a.stage;
  std::vector<OwnedGradient> out;
  if (c.config.zero_stage == 0) {
    for (const nn::ParamRef& p : stage.parameters())
      out.push_back({p.name, p.name, tp_slice(c, p.name, want.at(p.name), tp_rank)});
    return out;
  }
  for (const std::vector<std::string>& unit : unit_parameters(*a.stage)) {
    std::vector<float> w;
    for (const std::string& name : unit) {
      const std::vector<float> b = tp_slice(c, name, want.at(name), tp_rank);
      w.insert(w.end(), b.begin(), b.end());
    }
    const nn::ShardLayout layout(static_cast<int64_t>(w.size()), c.config.dp);
    if (layout.real_numel(dp_rank) == 0) continue;
    const auto from = static_cast<std::ptrdiff_t>(layout.shard_offset(dp_rank));
    const auto to = from + static_cast<std::ptrdiff_t>(layout.real_numel(dp_rank));
    double norm = 0;
    for (const float x : w) norm += double(x) * x;
    const double share = std::sqrt(norm * static_cast<double>(to - from) / double(w.size()));
    out.push_back({unit.front(), "F8's unit " + unit_name(stage, unit),
                   std::vector<float>(w.begin() + from, w.begin() + to), share});
  }
  return out;
}

// ---- proof-traffic: what a rank's trace holds over the two steps ------------------------------
struct Traffic {
  std::map<int, int64_t> sent, received, messages;  // point to point, by peer (world rank)
  // Payload bytes by group (trace.h: the tensor; reduce-scatter and all-gather: the full buffer).
  std::map<std::vector<int>, int64_t> all_reduced, reduce_scattered, all_gathered;
  int64_t odd_messages = 0;       // messages of another size than one micro-batch's activation
  int64_t other_collectives = 0;  // other collectives over more than one rank
  bool operator==(const Traffic& o) const {
    return sent == o.sent && received == o.received && messages == o.messages &&
           all_reduced == o.all_reduced && reduce_scattered == o.reduce_scattered &&
           all_gathered == o.all_gathered && odd_messages == o.odd_messages &&
           other_collectives == o.other_collectives;
  }
};

// One micro-batch's activation (or its gradient) between stages: [micro_batch, T, D] float32,
// or a rank's T/k positions of it under SP (`whole`: the micro-batch's [N, D] in any case).
inline int64_t activation_bytes(const ProofCase& c, bool whole = false) {
  const int64_t cut = c.config.sequence_parallel && !whole ? c.config.tp : 1;
  return 4 * c.config.micro_batch * c.model.context * c.model.dim / cut;
}

// Sums a rank's events (peers of a point-to-point event: the destination, then the source).
inline Traffic traffic_of(const std::vector<dist::TraceEvent>& events, int64_t activation) {
  Traffic t;
  for (const dist::TraceEvent& e : events) {
    if (e.kind == dist::TraceKind::PointToPoint && !e.peers.empty()) {
      if (e.op == "send" || e.op == "send_recv") {
        t.sent[e.peers.front()] += e.bytes_sent;
        ++t.messages[e.peers.front()];
        if (e.bytes_sent != activation) ++t.odd_messages;
      }
      if (e.op == "recv" || e.op == "send_recv") t.received[e.peers.back()] += e.bytes_received;
    } else if (e.kind == dist::TraceKind::Collective && e.op != "split" && e.group.size() > 1) {
      if (e.op == "all_reduce") {
        t.all_reduced[e.group] += e.bytes;
      } else if (e.op == "reduce_scatter") {
        t.reduce_scattered[e.group] += e.bytes;
      } else if (e.op == "all_gather") {
        t.all_gathered[e.group] += e.bytes;
      } else {
        ++t.other_collectives;
      }
    }
  }
  return t;
}

// The plan's traffic of world rank r over two steps: m activations to the next stage and m
// gradients to the previous one a step (to the same TP rank of the neighbouring stage), as many
// received; under TP, the TP group's all-reduces of every micro-batch (the core's layers and
// loss: the lookup's [N, D] on stage 0; per block two [N, D] forward, two backward, two more when
// checkpointed; the head's dx [N, D] and the loss's three of N floats on the last stage; under
// SP each block's all-reduce of [N, D] an all-gather AND a reduce-scatter of it, the head's dx a
// reduce-scatter and its input an all-gather, stage 0's backward an all-gather of its rows'
// gradient, and each LayerNorm's two gradients of D floats all-reduced every backward); the
// stage's gradients (4 bytes a parameter of the rank's shards) all-reduced in the DP group once
// a step, or under ZeRO-1 each unit's padded gradient reduce-scattered and its padded values
// all-gathered there once a step (`padded`: the stage's units' padded elements), under ZeRO-2
// the gradient after every micro-batch, under ZeRO-3 also the values before every micro-batch's
// forward and backward (none after the step); with a tied head and pp > 1, the table's gradient
// (the TP rank's rows) all-reduced between the pipeline's first and last stage once a step (under
// ZeRO-2 and -3 the rank's shard of it, padding included). Under bf16-mixed TP's all-reduces of
// what a GEMM makes, SP's reduce-scatters and ZeRO's all-gathers of the values carry bf16 (the
// gradients stay float32).
inline Traffic expected_traffic(const ProofCase& c, int r, int64_t stage_parameters,
                                int64_t padded) {
  const int pp = c.config.pp, dp = c.config.dp, k = c.config.tp;
  const Position at = position(c, r);
  const int s = at.stage, d = at.dp_rank, t = at.tp_rank;
  auto rank_of = [&](int dd, int ss, int tt) { return (dd * pp + ss) * k + tt; };
  const int64_t m = c.config.accumulation, a = activation_bytes(c);
  Traffic out;
  for (const int peer_stage : {s - 1, s + 1}) {
    if (peer_stage < 0 || peer_stage >= pp) continue;
    const int peer = rank_of(d, peer_stage, t);
    out.sent[peer] = out.received[peer] = 2 * m * a;
    out.messages[peer] = 2 * m;
  }
  if (k > 1) {
    std::vector<int> group;
    for (int j = 0; j < k; ++j) group.push_back(rank_of(d, s, j));
    const int64_t blocks = c.model.layers / pp, n = c.config.micro_batch * c.model.context;
    const int64_t whole = activation_bytes(c, true), ln = 2 * 4 * c.model.dim;
    // What a GEMM makes (a row layer's output, a column layer's dx, the head's dx) is in the
    // compute dtype; what SP gathers (a LayerNorm's output, the stream's gradient) and the
    // lookup's output are float32.
    const int64_t made = c.config.precision == lab11::Precision::Bf16Mixed ? whole / 2 : whole;
    const int64_t per_block = (c.config.activation_checkpointing ? 6 : 4);
    const bool first = s == 0, last = s == pp - 1;
    if (!c.config.sequence_parallel) {
      out.all_reduced[group] =
          2 * m * (blocks * per_block * made + (first ? whole : 0) + (last ? made + 3 * 4 * n : 0));
    } else {
      out.all_reduced[group] =
          2 * m * (blocks * 2 * ln + (first ? whole : 0) + (last ? ln + 3 * 4 * n : 0));
      out.all_gathered[group] =
          2 * m * (blocks * per_block * whole + (first ? whole : 0) + (last ? whole : 0));
      out.reduce_scattered[group] = 2 * m * (blocks * per_block * made + (last ? made : 0));
    }
  }
  if (dp > 1) {
    std::vector<int> group;
    for (int i = 0; i < dp; ++i) group.push_back(rank_of(i, s, t));
    if (c.config.zero_stage == 0) {
      out.all_reduced[group] = 2 * 4 * stage_parameters;
    } else {  // ZeRO-2/3: every micro-batch's gradient; ZeRO-3: the values for each pass
      const int zero = c.config.zero_stage;
      out.reduce_scattered[group] = 2 * 4 * padded * (zero >= 2 ? m : 1);
      const int64_t value = is_bf16(c) ? 2 : 4;  // F8: the full values are the bf16 copy
      out.all_gathered[group] = 2 * value * padded * (zero == 3 ? 2 * m : 1);
    }
  }
  if (c.model.tied_head && pp > 1 && (s == 0 || s == pp - 1)) {
    // ZeRO-2/3 sum the table's two averaged shards, cut alike: one shard of it.
    const nn::ShardLayout table(c.model.vocab / k * c.model.dim, dp);
    out.all_reduced[{rank_of(d, 0, t), rank_of(d, pp - 1, t)}] +=
        2 * 4 * (c.config.zero_stage >= 2 ? table.shard_size() : table.numel);
  }
  return out;
}

// A Traffic as one sequence of integers, for the judge: the two counts, then each map as its
// size and its entries (a group as its size, its members, its bytes).
inline std::vector<int64_t> flatten(const Traffic& t) {
  std::vector<int64_t> v = {t.odd_messages, t.other_collectives};
  for (const std::map<int, int64_t>* by_peer : {&t.sent, &t.received, &t.messages}) {
    v.push_back(static_cast<int64_t>(by_peer->size()));
    for (const auto& [peer, n] : *by_peer) v.insert(v.end(), {peer, n});
  }
  for (const auto* by_group : {&t.all_reduced, &t.reduce_scattered, &t.all_gathered}) {
    v.push_back(static_cast<int64_t>(by_group->size()));
    for (const auto& [group, n] : *by_group) {
      v.push_back(static_cast<int64_t>(group.size()));
      v.insert(v.end(), group.begin(), group.end());
      v.push_back(n);
    }
  }
  return v;
}

// "to rank 1: 6144 bytes in 6 messages; ...": for messages.
inline std::string describe(const Traffic& t) {
  std::ostringstream s;
  for (const auto& [peer, n] : t.sent) {
    s << "sent to rank " << peer << ": " << n << " bytes in " << t.messages.at(peer)
      << " messages; ";
  }
  for (const auto& [peer, n] : t.received) s << "received from rank " << peer << ": " << n << "; ";
  const std::pair<const char*, const std::map<std::vector<int>, int64_t>*> collectives[] = {
      {"all-reduced", &t.all_reduced},
      {"reduce-scattered", &t.reduce_scattered},
      {"all-gathered", &t.all_gathered}};
  for (const auto& [what, by_group] : collectives) {
    for (const auto& [group, n] : *by_group) {
      s << what << " in {";
      for (std::size_t i = 0; i < group.size(); ++i) s << (i > 0 ? "," : "") << group[i];
      s << "}: " << n << " bytes; ";
    }
  }
  s << t.odd_messages << " message(s) not of one activation's size, " << t.other_collectives
    << " other collective(s)";
  return s.str();
}

}  // namespace lab11_proof_cases
