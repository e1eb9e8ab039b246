// The inputs of lab 11's tests, shared with the judge (judge/lab11_judge.cpp): the GPT shapes the
// core runs at dp = tp = pp = 1 (anchor), the seeded models and configurations of the memory
// model's sweeps, the clusters, search requests, plans and breakdowns of TODOs 2 to 4. Inputs
// only: the answers are the judge's. Each list is drawn from the grading seed (gtl_test_seed.h)
// and the test's name, so the judge draws the very same inputs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "capstone.h"
#include "gtl_test_seed.h"

namespace lab11_cases {

using lab11::Config;
using lab11::ModelSpec;
using lab11::Precision;

// A GPT the core can run in a test (a few MB at most), with its micro-batch. T = context.
struct AnchorCase {
  ModelSpec model;
  int64_t batch = 1;
  bool checkpoint = false;
  uint64_t seed = 0;
};

// Fixed shapes: the MLP-bound and the attention-bound peak (H*T > 2D + 1), T = 1, untied heads,
// three blocks checkpointed.
inline std::vector<AnchorCase> fixed_anchor_cases() {
  return {
      {{1, 8, 2, 11, 5, true}, 2, false, 1}, {{2, 8, 4, 17, 13, false}, 3, false, 2},
      {{3, 4, 1, 9, 1, true}, 5, false, 3},  {{2, 12, 3, 13, 7, true}, 3, false, 4},
      {{3, 8, 2, 11, 5, true}, 2, true, 5},  {{3, 8, 4, 7, 13, false}, 2, true, 6},
  };
}

// Two shapes drawn from the seed: L 1-3, H 1-4, head width 1-4, V 5-40, T 1-16, B 1-4 (B T >= 2:
// F5's regime), tied or not, checkpointed or not.
inline std::vector<AnchorCase> seeded_anchor_cases(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  using gtl::test_seed::draw;
  std::vector<AnchorCase> out;
  for (int i = 0; i < 2; ++i) {
    AnchorCase a;
    a.model.layers = draw(g, 1, 3);
    a.model.heads = draw(g, 1, 4);
    a.model.dim = a.model.heads * draw(g, 1, 4);
    a.model.vocab = draw(g, 5, 40);
    a.model.context = draw(g, 1, 16);
    a.model.tied_head = draw(g, 0, 1) == 1;
    a.batch = draw(g, 1, 4);
    a.checkpoint = draw(g, 0, 1) == 1;
    a.seed = static_cast<uint64_t>(draw(g, 1, 1000));
    // F5's regime: with one token a step (N = 1) and a vocabulary many times the width, the
    // step peaks in the loss's and the head's backward instead, a moment the model leaves out.
    if (a.batch * a.model.context == 1) a.batch = 2;
    out.push_back(a);
  }
  return out;
}

// A model and a configuration of the sweeps: every stage's breakdown is recorded and judged.
struct SweepCase {
  ModelSpec model;
  Config config;
};

// Realistic and odd shapes alike: L divisible by pp, H and V by tp, T by tp under SP.
inline std::vector<SweepCase> seeded_sweep_cases(const std::string& test, int count) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  using gtl::test_seed::draw;
  std::vector<SweepCase> out;
  while (static_cast<int>(out.size()) < count) {
    SweepCase s;
    const int tp = 1 << draw(g, 0, 3), pp = static_cast<int>(draw(g, 1, 6));
    s.config.tp = tp;
    s.config.pp = pp;
    s.config.dp = static_cast<int>(draw(g, 1, 16));
    s.config.zero_stage = static_cast<int>(draw(g, 0, 3));
    s.config.sequence_parallel = draw(g, 0, 1) == 1;
    s.config.micro_batch = draw(g, 1, 8);
    s.config.accumulation = draw(g, 1, 12);
    s.config.activation_checkpointing = draw(g, 0, 1) == 1;
    s.config.precision = draw(g, 0, 1) == 1 ? Precision::Bf16Mixed : Precision::Fp32;
    s.model.heads = tp * draw(g, 1, 8);
    s.model.dim = s.model.heads * 8 * draw(g, 1, 16);
    s.model.layers = pp * draw(g, 1, 8);
    s.model.vocab = tp * draw(g, 100, 8000);
    s.model.context = tp * draw(g, 1, 256);
    s.model.tied_head = draw(g, 0, 1) == 1;
    out.push_back(s);
  }
  return out;
}

// ---- TODO 2 ------------------------------------------------------------------------------------
using lab11::ClusterSpec;
using lab11::Link;

// Clusters for the placement and time checks: 1 to 4 nodes of 2, 4 or 8 GPUs (a few dozen GPUs:
// every rank enumerated), bandwidths and peaks of the order of an H100 node's.
struct TimeCase {
  ClusterSpec cluster;
  ModelSpec model;
  Config config;
  double mfu = 0.5;
};

// Every factorisation dp x tp x pp of the cluster's GPUs, with tp a power of two.
inline std::vector<Config> grids(const ClusterSpec& cl) {
  std::vector<Config> out;
  const int gpus = cl.nodes * cl.gpus_per_node;
  for (int tp = 1; tp <= gpus; tp *= 2)
    for (int pp = 1; pp <= gpus; ++pp)
      if (gpus % (tp * pp) == 0) {
        Config c;
        c.tp = tp;
        c.pp = pp;
        c.dp = gpus / (tp * pp);
        out.push_back(c);
      }
  return out;
}

inline std::vector<TimeCase> seeded_time_cases(const std::string& test, int count) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  using gtl::test_seed::draw;
  std::vector<TimeCase> out;
  while (static_cast<int>(out.size()) < count) {
    TimeCase tc;
    tc.cluster.nodes = static_cast<int>(draw(g, 1, 4));
    tc.cluster.gpus_per_node = 2 << draw(g, 0, 2);
    tc.cluster.intra_node_bytes_per_s = 1e9 * static_cast<double>(draw(g, 100, 900));
    tc.cluster.inter_node_bytes_per_s = 1e9 * static_cast<double>(draw(g, 5, 100));
    tc.cluster.peak_flops = 1e12 * static_cast<double>(draw(g, 100, 2000));
    std::vector<Config> all;  // the valid grids: TP inside a node
    for (const Config& c : grids(tc.cluster))
      if (tc.cluster.gpus_per_node % c.tp == 0) all.push_back(c);
    Config c = all[static_cast<std::size_t>(draw(g, 0, static_cast<int64_t>(all.size()) - 1))];
    // A model every one of these grids can cut: L a multiple of pp, H, V and T of tp.
    tc.model.heads = c.tp * draw(g, 1, 4);
    tc.model.dim = tc.model.heads * 16 * draw(g, 1, 8);
    tc.model.layers = c.pp * draw(g, 1, 6);
    tc.model.vocab = c.tp * draw(g, 1000, 20000);
    tc.model.context = c.tp * 64 * draw(g, 1, 16);
    tc.model.tied_head = draw(g, 0, 1) == 1;
    c.zero_stage = static_cast<int>(draw(g, 0, 3));
    c.sequence_parallel = c.tp > 1 && draw(g, 0, 1) == 1;
    c.micro_batch = draw(g, 1, 8);
    c.accumulation = draw(g, 1, 16);
    c.activation_checkpointing = draw(g, 0, 1) == 1;
    c.precision = draw(g, 0, 1) == 1 ? Precision::Bf16Mixed : Precision::Fp32;
    tc.config = c;
    tc.mfu = static_cast<double>(draw(g, 20, 70)) / 100.0;
    out.push_back(tc);
  }
  return out;
}

// ---- TODO 3 ------------------------------------------------------------------------------------
using lab11::Candidate;
using lab11::SearchRequest;

// Seeded pricing functions with few distinct values, so that equal speeds and equal memories
// are common: ties must be broken by the rule.
struct ToyPricing {
  uint64_t a = 1, b = 1;
  int64_t memory(const Config& c) const {
    const uint64_t h = static_cast<uint64_t>(c.dp * 7 + c.tp * 3 + c.pp * 5 + c.zero_stage * 11 +
                                             c.micro_batch * 2 + (c.sequence_parallel ? 13 : 0) +
                                             (c.activation_checkpointing ? 17 : 0));
    return 1000 * static_cast<int64_t>(((h * a) >> 3) % 4 + 1);
  }
  double speed(const Config& c) const {
    const uint64_t h = static_cast<uint64_t>(c.dp * 5 + c.tp * 11 + c.pp * 3 + c.zero_stage * 7 +
                                             c.micro_batch * 13 + (c.sequence_parallel ? 2 : 0) +
                                             (c.activation_checkpointing ? 19 : 0));
    return 0.5 * static_cast<double>(((h * b) >> 2) % 5 + 1);
  }
};

struct SearchCase {
  ModelSpec model;
  ClusterSpec cluster;
  SearchRequest request;
  ToyPricing pricing;
};

// Clusters of 1 to 4 nodes of 1 to 8 GPUs, models with 1 to 12 layers; global batches that some
// micro-batches and DP sizes divide and others do not; memory limits from none fitting to all.
inline std::vector<SearchCase> seeded_search_cases(const std::string& test, int count) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  using gtl::test_seed::draw;
  std::vector<SearchCase> out;
  for (int i = 0; i < count; ++i) {
    SearchCase s;
    s.cluster.nodes = static_cast<int>(draw(g, 1, 4));
    s.cluster.gpus_per_node = static_cast<int>(draw(g, 1, 8));
    s.cluster.gpu_memory_bytes = 1000 * draw(g, 0, 4) + 500 * draw(g, 0, 1);
    s.model.layers = draw(g, 1, 12);
    s.model.heads = draw(g, 1, 8);
    s.model.dim = s.model.heads * 8;
    s.model.vocab = 8 * draw(g, 1, 64);
    s.model.context = draw(g, 1, 4) * 16;
    s.request.global_batch_tokens = s.model.context * draw(g, 1, 96);
    s.request.max_micro_batch = draw(g, 1, 8);
    s.request.precision = draw(g, 0, 1) ? Precision::Bf16Mixed : Precision::Fp32;
    s.pricing.a = static_cast<uint64_t>(draw(g, 1, 1000));
    s.pricing.b = static_cast<uint64_t>(draw(g, 1, 1000));
    out.push_back(s);
  }
  return out;
}

// ---- TODO 4 ------------------------------------------------------------------------------------

// Seeded plans for the table, built from drawn numbers so that TODO 4's checks need no other
// TODO: up to 40 candidates (candidate i runs dp = i + 1, so no two describe alike; the other
// fields drawn), memories of 1 to 4 levels of about 11.5 GiB and speeds of 1 to 5 steps of 617
// tokens/s (equal speeds and equal memories are common), fitting when their level is at most the
// plan's limit (0 to 4: from none fitting to all). `feasible`: some candidate fits; `best` is
// left default: plan_table reads `feasible` and `candidates` only.
inline std::vector<lab11::Plan> seeded_plans(const std::string& test, int count) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  using gtl::test_seed::draw;
  std::vector<lab11::Plan> out;
  for (int i = 0; i < count; ++i) {
    lab11::Plan plan;
    const int64_t n = draw(g, 0, 40), limit = draw(g, 0, 4);
    for (int64_t j = 0; j < n; ++j) {
      Candidate k;
      k.config.dp = static_cast<int>(j + 1);
      k.config.tp = 1 << draw(g, 0, 3);
      k.config.pp = static_cast<int>(draw(g, 1, 4));
      k.config.zero_stage = static_cast<int>(draw(g, 0, 3));
      k.config.sequence_parallel = k.config.tp > 1 && draw(g, 0, 1) == 1;
      k.config.micro_batch = 1 << draw(g, 0, 3);
      k.config.accumulation = draw(g, 1, 64);
      k.config.activation_checkpointing = draw(g, 0, 1) == 1;
      k.config.precision = draw(g, 0, 1) == 1 ? Precision::Bf16Mixed : Precision::Fp32;
      const int64_t level = draw(g, 1, 4);
      k.memory_bytes = level * 12'345'678'901;
      k.tokens_per_s = 617.25 * static_cast<double>(draw(g, 1, 5));
      k.fits = level <= limit;
      plan.feasible = plan.feasible || k.fits;
      plan.candidates.push_back(k);
    }
    out.push_back(plan);
  }
  return out;
}

// Seeded breakdowns of every shape: a category zero, the total above and below the GPU's memory.
inline std::vector<std::pair<lab11::MemoryBreakdown, int64_t>> seeded_breakdowns(
    const std::string& test, int count) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  using gtl::test_seed::draw;
  std::vector<std::pair<lab11::MemoryBreakdown, int64_t>> out;
  for (int i = 0; i < count; ++i) {
    lab11::MemoryBreakdown m;
    m.parameters = draw(g, 0, 3) * draw(g, 0, 40'000'000'000);
    m.gradients = draw(g, 0, 40'000'000'000);
    m.optimizer = draw(g, 0, 40'000'000'000);
    m.activations = draw(g, 0, 1) * draw(g, 0, 80'000'000'000);
    m.other = draw(g, 0, 5'000'000'000);
    out.emplace_back(m, draw(g, 1, 160'000'000'000));
  }
  return out;
}

// The fixed configurations of the property tests, on a GPT-2-small-like model (L 12, D 768,
// H 12, V 50304, T 1024, tied).
inline ModelSpec gpt2_small() {
  return {12, 768, 12, 50304, 1024, true};
}

}  // namespace lab11_cases
