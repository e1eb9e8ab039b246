// Lab 10: the shape of one attention call (attention.h), in a header of its own so that the
// lab's judge, which has no CUDA, can describe the tests' cases.
#pragma once

namespace lab10 {

struct AttentionShape {
  int bh = 0;  // batch x heads
  int t = 0;   // sequence length (queries = keys)
  int d = 0;   // head dimension
  bool causal = false;
};

}  // namespace lab10
