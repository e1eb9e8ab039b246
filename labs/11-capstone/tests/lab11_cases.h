// The inputs of lab 11's tests, shared with the judge (judge/lab11_judge.cpp): the GPT shapes the
// core runs at dp = tp = pp = 1 (anchor) and the seeded models and configurations of the memory
// model's sweeps. Each list is drawn from the grading seed (gtl_test_seed.h) and the test's name,
// so the judge draws the very same inputs.
#pragma once

#include <cstdint>
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

// The fixed configurations of the property tests, on a GPT-2-small-like model (L 12, D 768,
// H 12, V 50304, T 1024, tied).
inline ModelSpec gpt2_small() {
  return {12, 768, 12, 50304, 1024, true};
}

}  // namespace lab11_cases
