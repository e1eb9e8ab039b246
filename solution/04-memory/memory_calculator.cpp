// Lab 04, TODO 1: predict the bytes of a training step before running it.
#include <algorithm>

#include "memory_lab.h"

namespace lab04 {

// SOLUTION(lab04) step 1: the parameters, then the step's bytes term by term.
int64_t count_parameters(const ModelConfig& config) {
  int64_t in = 1;
  for (int64_t d : config.input) in *= d;
  const int64_t D = config.hidden, C = config.classes;
  const int64_t block = 2 * D + (D * 4 * D + 4 * D) + (4 * D * D + D);  // LN, fc1, fc2
  return (in * D + D) + config.blocks * block + 2 * D + (D * C + C);
}
MemoryEstimate estimate_step_memory(const ModelConfig& config, int64_t batch) {
  MemoryEstimate e;
  const int64_t p = count_parameters(config) * 4;
  e.weights = p;
  e.gradients = p;
  e.optimizer_state = 2 * p;
  int64_t in = 1;
  for (int64_t d : config.input) in *= d;
  e.batch = batch * in * 4 + batch * 8;
  const int64_t D = config.hidden, C = config.classes;
  // Per sample: every block (10D + 2) floats; the head: LayerNorm's input and stats (D + 2), the
  // last Linear's input (D) and the logits (C); the stream into the first block is the first
  // block's saved input.
  e.activations = 4 * batch * (config.blocks * (10 * D + 2) + 2 * D + 2 + C);
  // Backward's working set on top, at its peak (the head's backward): dlogits (C), the gradients
  // flowing through the head (3D - 2 per sample) and a bias-gradient temporary (D).
  const int64_t head = e.activations + 4 * (batch * (3 * D - 2 + C) + D);
  // Or at the very end, the first Linear's backward: every activation is gone, but it writes the
  // gradient of its input (in floats per sample, though nobody needs it) next to its dy (D) and
  // a bias-gradient temporary (D), while the caller still holds the logits and dlogits (2C).
  // With a small D, few blocks and a wide input this one is the larger.
  const int64_t first = 4 * (batch * (in + D + 2 * C) + D);
  e.peak = e.persistent() + e.batch + std::max(head, first);
  return e;
}
// END SOLUTION(lab04)

}  // namespace lab04
