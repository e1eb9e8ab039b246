// Lab 11, TODO 1: the memory one GPU holds at the peak of a training step, by category.
//
// Every byte here is one the core or an earlier lab really holds (the handout's "Facts"): the
// weights of the layers this stage and TP rank own, the float32 gradients, AdamW's state, the
// tensors each layer saved for its backward, and what the step holds beside them at its peak. At
// dp = tp = pp = 1 the tests run the core's GPT on the allocator and compare, to the byte.
#include <algorithm>

#include "capstone.h"
#include "gtl/runtime/error.h"

namespace lab11 {

int64_t stage_parameters(const ModelSpec& model, const Config& config, int stage) {
  check_config(model, config);
  GTL_CHECK(stage >= 0 && stage < config.pp,
            "stage_parameters: stage " << stage << " of " << config.pp);
  // TODO(lab11) step 1 (parameters): this stage's and TP rank 0's parameter count.
  //   Spec: capstone.h. What a block, the embeddings, the final LayerNorm and the head hold on
  //   one TP rank, and which stage holds which, are facts of labs 07 and 08 (handout, "Facts").
  //   Hint: split a block's parameter count (docs/core.md) into what lab 08 cuts in k and what it
  //   replicates. About 10 lines.
  (void)model;
  return 0;
  // END TODO(lab11)
}

MemoryBreakdown stage_memory(const ModelSpec& model, const Config& config, int stage) {
  const int64_t params = stage_parameters(model, config, stage);
  MemoryBreakdown m;
  m.stage = stage;
  // TODO(lab11) step 1 (memory): the bytes of each category at this stage's peak.
  //   Spec: capstone.h (the categories) and the handout's "Facts" (what the core, lab 06's ZeRO,
  //   lab 07's 1F1B and lab 08's layers hold). Derive each category from those facts; the tests
  //   measure the core at dp = tp = pp = 1 and check how each category must change with dp, the
  //   ZeRO stage, tp, SP, pp, the micro-batch count, checkpointing and the precision.
  //   Hint: write a block's saved bytes as three parts: what SP divides, what stays whole, what
  //   TP divides. About 40 lines for the state and the activations, 70 more for F15's moments
  //   (half of them bf16's).
  (void)params;
  // END TODO(lab11)
  return m;
}

MemoryBreakdown memory_per_gpu(const ModelSpec& model, const Config& config) {
  MemoryBreakdown most = stage_memory(model, config, 0);
  for (int s = 1; s < config.pp; ++s) {
    const MemoryBreakdown m = stage_memory(model, config, s);
    if (m.total() > most.total()) most = m;
  }
  return most;
}

bool fits(const ModelSpec& model, const ClusterSpec& cluster, const Config& config) {
  return memory_per_gpu(model, config).total() <= cluster.gpu_memory_bytes;
}

}  // namespace lab11
