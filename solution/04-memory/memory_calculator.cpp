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

// SOLUTION(lab04) step 1b: the same step under mixed precision, term by term.
MemoryEstimate estimate_step_memory(const ModelConfig& config, int64_t batch,
                                    const gtl::nn::PrecisionPolicy& policy) {
  int64_t in = 1;
  for (int64_t d : config.input) in *= d;
  const int64_t D = config.hidden, C = config.classes, L = config.blocks, N = batch;
  const int64_t h = int64_t(gtl::dtype_size(policy.compute));  // 2 (bf16, fp16) or 4
  // The flat buffer: every parameter tensor's slot rounded up to 64 elements.
  auto slot = [](int64_t n) { return (n + 63) / 64 * 64; };
  const int64_t flat =
      slot(in * D) + slot(D) +
      L * (2 * slot(D) + slot(4 * D * D) + slot(4 * D) + slot(4 * D * D) + slot(D)) + 2 * slot(D) +
      slot(C * D) + slot(C);
  MemoryEstimate e;
  e.weights = 4 * flat;          // the float32 masters: the model's own values
  e.gradients = 4 * flat;        // float32: write_grad widens each half dW into them
  e.compute_copy = h * flat;     // the half copy the GEMMs read
  e.optimizer_state = 8 * flat;  // AdamW's two float32 moments of the flat parameter
  e.batch = N * in * 4 + N * 8;
  // Per sample: the first Linear's half copy of the images (in), the first LayerNorm's float32
  // copy of the half stream (4D); per block: the float32 output (4D), LayerNorm's stats (8), fc1's
  // half input (D), GELU's half input and fc2's half input (4D each); the head's stats (8), its
  // Linear's half input (D) and the half logits (C).
  e.activations = N * (h * in + 4 * D + L * (4 * D + 8 + h * (D + 8 * D)) + 8 + h * D + h * C);
  // Backward's moments. A half GEMM holds only its half output c[m, n] in the allocator (its
  // float32 sums are registers on a GPU, the library's scratch on the CPU).
  auto gemm = [h](int64_t m, int64_t n) { return h * m * n; };
  const int64_t dlogits = h * N * C;
  // The last block's fc2: the head's context is gone (its stats, 8, and half input, hD, per
  // sample), the block's float32 dy took its output's place and fc2's half dy (hD) that of the
  // head's input; then dx = dy W2 and, with dx held, dW2 = dy^T x.
  const int64_t block = e.activations - 8 * N + dlogits;
  const int64_t fc2 = block + std::max(gemm(N, 4 * D), h * N * 4 * D + gemm(D, 4 * D));
  // The head's Linear: all activations and dlogits held; dx = dy W, then dW = dy^T x.
  const int64_t head = e.activations + dlogits + std::max(gemm(N, D), h * N * D + gemm(C, D));
  // The first Linear: its half input, the logits and dlogits, its half dy; dx = dy W (which
  // nobody needs), dW = dy^T x with dx held, then dx widened to the images' float32 while the
  // half dx is still held.
  const int64_t first = h * N * in + h * N * C + dlogits + h * N * D +
                        std::max({gemm(N, in), h * N * in + gemm(D, in), h * N * in + 4 * N * in});
  // The loss's backward, before the model's: every activation, the loss's float32 copy of the half
  // logits (none in float32: cast_to returns the same tensor) and its float32 dlogits. With many
  // classes and a narrow model this one is the largest.
  const int64_t logits32 = h == 4 ? 0 : 4 * N * C;
  const int64_t loss = e.activations + logits32 + 4 * N * C;
  e.peak = e.persistent() + e.batch + std::max({loss, fc2, head, first});
  return e;
}
// END SOLUTION(lab04)

}  // namespace lab04
