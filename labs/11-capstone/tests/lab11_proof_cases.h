// The inputs of TODO 5's checks, shared with the course's check of the reference model
// (judge/reference_anchor_test.cpp): the twins' shapes (fixed, and drawn from the grading seed),
// their batches, and what the core's GPTStage alone allocates on each stage, from which the tests
// derive each rank's share exactly.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "capstone.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/gpt_stage.h"
#include "gtl/optim/adamw.h"
#include "gtl_test_seed.h"
#include "nn/gpt_test_util.h"
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
                           uint64_t seed) {
  ProofCase c;
  c.model = model;
  c.config.dp = dp;
  c.config.pp = pp;
  c.config.micro_batch = mb;
  c.config.accumulation = m;
  c.config.activation_checkpointing = checkpoint;
  c.seed = seed;
  return c;
}

// Fixed: m > pp and m < pp, both kinds of head, checkpointing, a world of 8, pp = 1 with
// accumulation (DP alone), dp = 1 (a pipeline alone). Then three drawn from the seed.
inline std::vector<ProofCase> proof_cases(const std::string& test) {
  const ModelSpec tied{4, 16, 2, 29, 8, true}, untied{4, 16, 4, 23, 8, false};
  std::vector<ProofCase> out = {
      make_case(tied, 2, 2, 2, 3, false, 1), make_case(untied, 1, 4, 1, 2, false, 2),
      make_case(tied, 2, 4, 1, 5, true, 3),  make_case(untied, 2, 1, 2, 2, true, 4),
      make_case(tied, 1, 4, 2, 6, false, 5), make_case(tied, 1, 1, 1, 1, false, 6),
  };
  std::mt19937_64 g = gtl::test_seed::generator(test);
  using gtl::test_seed::draw;
  for (int i = 0; i < 3; ++i) {
    ModelSpec model;
    const int pp = static_cast<int>(1 << draw(g, 0, 2));
    model.layers = pp * draw(g, 1, 2);
    model.heads = draw(g, 1, 4);
    model.dim = model.heads * 4 * draw(g, 1, 3);
    model.vocab = draw(g, 8, 48);
    model.context = draw(g, 2, 12);
    model.tied_head = draw(g, 0, 1) == 1;
    const int dp = static_cast<int>(draw(g, 1, 2));
    out.push_back(make_case(model, dp, pp, draw(g, 1, 3), draw(g, 1, 6), draw(g, 0, 1) == 1,
                            static_cast<uint64_t>(draw(g, 1, 1000))));
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

// ---- one micro-batch on one stage, for proof-memory -------------------------------------------
// What the core's GPTStage alone allocates on stage s: its parameters, gradients and AdamW state
// (built), the peak of one micro-batch's forward and backward beyond that (the last stage with
// its targets, loss, logits and dlogits held through the backward; another stage with the
// gradient it receives), and what one micro-batch's forward leaves held (its input included: the
// ids on stage 0, the received activation elsewhere; the output sent on is not kept).
struct StagePieces {
  int64_t built = 0, one_micro_batch = 0, held = 0;
};

inline StagePieces stage_pieces(const ProofCase& c, int s) {
  const int pp = c.config.pp;
  const int64_t mb = c.config.micro_batch, t = c.model.context, d = c.model.dim;
  std::shared_ptr<Allocator> alloc = make_cpu_caching_allocator();
  StagePieces p;
  AllocatorScope scope(alloc);
  nn::GPTStage stage(gpt_config(c), s, pp);
  optim::AdamW adamw(stage.parameters());
  p.built = alloc->stats().allocated_bytes;
  const ProofBatch b = make_batch(c, 1);
  const std::vector<int64_t> ids(b.ids.begin(), b.ids.begin() + mb * t);
  const std::vector<int64_t> targets(b.targets.begin(), b.targets.begin() + mb * t);
  auto input = [&] {
    return s == 0 ? gtl::testing::ids_tensor(ids, {mb, t}) : Tensor::zeros({mb, t, d});
  };
  {  // what one forward leaves held
    nn::Context ctx;
    const int64_t before = alloc->stats().allocated_bytes;
    { const Tensor y = stage.forward(input(), ctx); }
    p.held = alloc->stats().allocated_bytes - before;
  }
  alloc->reset_peak_stats();
  {
    nn::Context ctx;
    if (s == pp - 1) {
      const Tensor tg = gtl::testing::ids_tensor(targets, {mb * t});
      const Tensor logits = stage.forward(input(), ctx);
      const nn::CrossEntropyLoss loss;
      nn::Context loss_ctx;
      const Tensor l = loss.forward(logits, tg, loss_ctx);
      const Tensor dlogits = loss.backward(loss_ctx);
      stage.backward(ctx, dlogits);
    } else {
      { const Tensor y = stage.forward(input(), ctx); }
      const Tensor dy = Tensor::zeros({mb, t, d});
      stage.backward(ctx, dy);
    }
  }
  p.one_micro_batch = alloc->stats().peak_allocated_bytes - p.built;
  return p;
}

// Rank peak of stage s: what it built, one micro-batch's peak there, and the saved bytes of each
// other micro-batch 1F1B holds on it (min(pp - s, m) in all).
inline int64_t stage_share(const ProofCase& c, const StagePieces& p, int s) {
  const int64_t in_flight = std::min<int64_t>(c.config.pp - s, c.config.accumulation);
  return p.built + p.one_micro_batch + (in_flight - 1) * p.held;
}

}  // namespace lab11_proof_cases
