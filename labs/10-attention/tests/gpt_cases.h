// Lab 10, TODO 5: the GPTs its tests train through the seam, shared with the judge. Fixed edges
// (two blocks of two 64-wide heads; one 128-wide head and T = 1) and one GPT drawn from the
// grading seed (heads of 64, 1 or 2 of them, T from 2 to 24, batch 1 to 3).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gtl_test_seed.h"

namespace lab10_gpt_cases {

struct GptCase {
  int64_t layers = 0, heads = 0, dim = 0, t = 0, batch = 0, vocab = 0;
  uint64_t seed = 0;  // the weights' and the batch's
  int64_t head_dim() const { return dim / heads; }
};

inline std::string describe(const GptCase& c) {
  return std::to_string(c.layers) + (c.layers == 1 ? " block, " : " blocks, ") +
         std::to_string(c.heads) + " heads of " + std::to_string(c.head_dim()) + ", T " +
         std::to_string(c.t) + ", batch " + std::to_string(c.batch);
}

inline std::vector<GptCase> cases(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  const int64_t heads = gtl::test_seed::draw(g, 1, 2);
  return {
      {2, 2, 128, 9, 2, 32, 11},
      {1, 1, 128, 1, 3, 16, 12},
      {gtl::test_seed::draw(g, 1, 2), heads, 64 * heads, gtl::test_seed::draw(g, 2, 24),
       gtl::test_seed::draw(g, 1, 3), 24, 13 + gtl::test_seed::seed()},
  };
}

// The two AdamW steps each case trains, and the tolerance of their losses and gradients against
// the reference path's: ||flash - reference|| <= kRelative ||reference|| (derived in the handout,
// "TODO 5's tolerance").
constexpr int kSteps = 2;
constexpr double kRelative = 1e-3;

}  // namespace lab10_gpt_cases
