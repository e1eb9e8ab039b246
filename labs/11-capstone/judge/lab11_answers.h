// The answers lab 11's judge holds (docs/grader.md, "The judge"): the reference implementations
// the judge compares the tests' recorded outputs with, exactly. Course-side only: the students'
// release has no judge/ folder, so the visible tests check properties and record what they saw.
//   placement      every rank enumerated with its node (TODO 2's place)
//   search-space   the space by brute force over a superset (TODO 3's candidates)
//   search-choice  the choice by the rule over that space (TODO 3's best)
//   report-table   the Pareto front of a plan's fitting candidates (TODO 4's plan_table)
//   report-svg     the lines memory_svg writes (TODO 4)
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "capstone.h"
#include "lab11_cases.h"

namespace lab11_answers {

using lab11::Candidate;
using lab11::ClusterSpec;
using lab11::Config;
using lab11::Link;
using lab11::ModelSpec;
using lab11::SearchRequest;

// ---- TODO 2 ------------------------------------------------------------------------------------

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

// ---- TODO 3 ------------------------------------------------------------------------------------

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

// The space priced by the tests' toy pricing, fits against the cluster's memory.
inline std::vector<Candidate> priced_space(const lab11_cases::SearchCase& s) {
  std::vector<Candidate> out;
  for (const Config& c : brute_force_space(s.model, s.cluster, s.request)) {
    Candidate k;
    k.config = c;
    k.memory_bytes = s.pricing.memory(c);
    k.tokens_per_s = s.pricing.speed(c);
    k.fits = k.memory_bytes <= s.cluster.gpu_memory_bytes;
    out.push_back(k);
  }
  return out;
}

// ---- TODO 4 ------------------------------------------------------------------------------------

// The indices of the Pareto front of the fitting candidates (no other fitting candidate at least
// as fast with no more memory, strictly better in one), fastest first, ties by index: each
// candidate compared with every other, then a stable sort.
inline std::vector<std::size_t> pareto_front(const std::vector<Candidate>& cands) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < cands.size(); ++i) {
    if (!cands[i].fits) continue;
    bool dominated = false;
    for (std::size_t j = 0; j < cands.size() && !dominated; ++j) {
      const Candidate& a = cands[i];
      const Candidate& b = cands[j];
      dominated = j != i && b.fits && b.tokens_per_s >= a.tokens_per_s &&
                  b.memory_bytes <= a.memory_bytes &&
                  (b.tokens_per_s > a.tokens_per_s || b.memory_bytes < a.memory_bytes);
    }
    if (!dominated) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [&](std::size_t a, std::size_t b) {
    return cands[a].tokens_per_s > cands[b].tokens_per_s;
  });
  return out;
}

// The lines plan_table must write (capstone.h): the front's first `rows`.
inline std::vector<std::string> expected_table(const lab11::Plan& plan, int rows) {
  if (!plan.feasible) return {"No configuration fits."};
  std::vector<std::string> out = {"| # | configuration | memory (GiB) | tokens/s |",
                                  "|---|---|---|---|"};
  const std::vector<std::size_t> front = pareto_front(plan.candidates);
  for (std::size_t row = 0; row < front.size() && row < static_cast<std::size_t>(rows); ++row) {
    const Candidate& c = plan.candidates[front[row]];
    char line[512];
    std::snprintf(line, sizeof line, "| %zu | %s | %.2f | %.0f |", row + 1,
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

}  // namespace lab11_answers
