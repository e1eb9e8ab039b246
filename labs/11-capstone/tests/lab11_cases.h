// The inputs of lab 11's tests, shared with the judge (judge/lab11_judge.cpp): the GPT shapes the
// core runs at dp = tp = pp = 1 (anchor) and the seeded models and configurations of the memory
// model's sweeps. Each list is drawn from the grading seed (gtl_test_seed.h) and the test's name,
// so the judge draws the very same inputs.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
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

// Two shapes drawn from the seed: L 1-3, H 1-4, head width 1-4, V 5-40, T 1-16, B 1-4, tied or
// not, checkpointed or not.
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

// The placement by enumerating every rank (capstone.h's order r = (d pp + s) tp + t): each group's
// members and the nodes they sit on. Slow, obviously right: what place() must agree with.
struct BruteForcePlacement {
  bool valid = false;
  Link tp = Link::None, pp = Link::None, dp = Link::None;
};
inline BruteForcePlacement brute_force_placement(const ClusterSpec& cl, const Config& c) {
  BruteForcePlacement out;
  const int gpus = cl.nodes * cl.gpus_per_node;
  if (c.dp * c.tp * c.pp != gpus) return out;
  auto rank = [&](int d, int s, int t) { return (d * c.pp + s) * c.tp + t; };
  auto node = [&](int r) { return r / cl.gpus_per_node; };
  // The link of a group: None for one member, Inter when its members sit on several nodes.
  auto link = [&](const std::vector<int>& members) {
    if (members.size() < 2) return Link::None;
    for (int r : members)
      if (node(r) != node(members.front())) return Link::InterNode;
    return Link::IntraNode;
  };
  auto worst = [](Link a, Link b) { return static_cast<int>(a) > static_cast<int>(b) ? a : b; };
  for (int d = 0; d < c.dp; ++d)
    for (int s = 0; s < c.pp; ++s) {
      std::vector<int> g;
      for (int t = 0; t < c.tp; ++t) g.push_back(rank(d, s, t));
      out.tp = worst(out.tp, link(g));
    }
  if (out.tp == Link::InterNode) {
    out.tp = Link::None;
    out.pp = Link::None;
    return out;
  }
  for (int d = 0; d < c.dp; ++d)
    for (int t = 0; t < c.tp; ++t) {
      std::vector<int> g;
      for (int s = 0; s < c.pp; ++s) g.push_back(rank(d, s, t));
      out.pp = worst(out.pp, link(g));
    }
  for (int s = 0; s < c.pp; ++s)
    for (int t = 0; t < c.tp; ++t) {
      std::vector<int> g;
      for (int d = 0; d < c.dp; ++d) g.push_back(rank(d, s, t));
      out.dp = worst(out.dp, link(g));
    }
  out.valid = true;
  return out;
}

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

// The space by brute force: every tuple of a superset (every integer tp, pp and micro-batch in
// range), kept when it passes capstone.h's rules one by one, in capstone.h's order.
inline std::vector<Config> brute_force_space(const ModelSpec& m, const ClusterSpec& cl,
                                             const SearchRequest& r) {
  auto power_of_two = [](int64_t x) { return x >= 1 && (x & (x - 1)) == 0; };
  const int gpus = cl.nodes * cl.gpus_per_node;
  std::vector<Config> out;
  for (int tp = 1; tp <= gpus; ++tp)
    for (int pp = 1; pp <= gpus; ++pp)
      for (int zero = 0; zero <= 3; ++zero)
        for (int sp = 0; sp <= 1; ++sp)
          for (int64_t mb = 1; mb <= r.max_micro_batch; ++mb)
            for (int ck = 0; ck <= 1; ++ck) {
              if (!power_of_two(tp) || cl.gpus_per_node % tp || m.heads % tp || m.vocab % tp)
                continue;
              if (m.layers % pp || gpus % (tp * pp)) continue;
              if (sp && (tp == 1 || m.context % tp)) continue;
              const int dp = gpus / (tp * pp);
              if (!power_of_two(mb) || r.global_batch_tokens % (mb * dp * m.context)) continue;
              Config c;
              c.dp = dp;
              c.tp = tp;
              c.pp = pp;
              c.zero_stage = zero;
              c.sequence_parallel = sp == 1;
              c.micro_batch = mb;
              c.accumulation = r.global_batch_tokens / (mb * dp * m.context);
              c.activation_checkpointing = ck == 1;
              c.precision = r.precision;
              out.push_back(c);
            }
  return out;
}

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

// The index of the best candidate by the rule (-1 when none fits): the highest speed, then the
// smaller memory, then the earliest.
inline int brute_force_best(const std::vector<Candidate>& cands) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(cands.size()); ++i) {
    const Candidate& c = cands[static_cast<std::size_t>(i)];
    if (!c.fits) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const Candidate& b = cands[static_cast<std::size_t>(best)];
    if (c.tokens_per_s > b.tokens_per_s ||
        (c.tokens_per_s == b.tokens_per_s && c.memory_bytes < b.memory_bytes))
      best = i;
  }
  return best;
}

// ---- TODO 4 ------------------------------------------------------------------------------------

// A plan built by the brute force (space, toy pricing, choice), so that TODO 4's checks need no
// other TODO.
inline lab11::Plan brute_force_plan(const SearchCase& s) {
  lab11::Plan plan;
  for (const Config& c : brute_force_space(s.model, s.cluster, s.request)) {
    Candidate k;
    k.config = c;
    // Scaled to a GPU's sizes (about 11 to 46 GiB, 600 to 3100 tokens/s), fitting as priced.
    k.memory_bytes = s.pricing.memory(c) * 12'345'679;
    k.tokens_per_s = s.pricing.speed(c) * 1234.5;
    k.fits = s.pricing.memory(c) <= s.cluster.gpu_memory_bytes;
    plan.candidates.push_back(k);
  }
  const int best = brute_force_best(plan.candidates);
  plan.feasible = best >= 0;
  if (plan.feasible) plan.best = plan.candidates[static_cast<std::size_t>(best)];
  return plan;
}

// The lines plan_table must write (capstone.h), the order found by taking the brute-force best
// of what is left, again and again.
inline std::vector<std::string> expected_table(const lab11::Plan& plan, int rows) {
  if (!plan.feasible) return {"No configuration fits."};
  std::vector<std::string> out = {"| # | configuration | memory (GiB) | tokens/s |",
                                  "|---|---|---|---|"};
  std::vector<Candidate> left = plan.candidates;
  for (int row = 1; row <= rows; ++row) {
    const int best = brute_force_best(left);
    if (best < 0) break;
    const Candidate c = left[static_cast<std::size_t>(best)];
    left[static_cast<std::size_t>(best)].fits = false;  // taken
    char line[512];
    std::snprintf(line, sizeof line, "| %d | %s | %.2f | %.0f |", row,
                  lab11::describe(c.config).c_str(),
                  static_cast<double>(c.memory_bytes) / 1073741824.0, c.tokens_per_s);
    out.push_back(line);
  }
  return out;
}

// The lines memory_svg must write (capstone.h).
inline std::vector<std::string> expected_svg(const lab11::MemoryBreakdown& m, int64_t gpu) {
  const double top = static_cast<double>(std::max(m.total(), gpu));
  std::vector<std::string> out = {
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"440\">"};
  const char* names[5] = {"parameters", "gradients", "optimizer", "activations", "other"};
  const char* fills[5] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f"};
  const int64_t bytes[5] = {m.parameters, m.gradients, m.optimizer, m.activations, m.other};
  double stack = 0;
  char line[256];
  for (int i = 0; i < 5; ++i) {
    const double h = 400.0 * static_cast<double>(bytes[i]) / top;
    stack += h;
    std::snprintf(
        line, sizeof line,
        "<rect data-category=\"%s\" x=\"60\" y=\"%.2f\" width=\"80\" height=\"%.2f\" fill=\"%s\"/>",
        names[i], 420.0 - stack, h, fills[i]);
    out.push_back(line);
  }
  const double y = 420.0 - 400.0 * static_cast<double>(gpu) / top;
  std::snprintf(
      line, sizeof line,
      "<line data-limit=\"gpu\" x1=\"40\" x2=\"160\" y1=\"%.2f\" y2=\"%.2f\" stroke=\"black\"/>", y,
      y);
  out.push_back(line);
  out.push_back("</svg>");
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
