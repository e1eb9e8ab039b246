// Lab 04, TODO 1: predict the bytes of a training step before running it.
#include <algorithm>

#include "memory_lab.h"

namespace lab04 {

// TODO(lab04) step 1: the parameters, then the step's bytes term by term.
int64_t count_parameters(const ModelConfig& config) {
  // Sum the parameters of every layer of the lab MLP (memory_lab.h names its layers; the core's
  // models.h and residual_mlp.h build them: read what each one registers).
  // About 6 lines.
  (void)config;
  throw gtl::Error("TODO(lab04) step 1: count_parameters is not implemented");
}

MemoryEstimate estimate_step_memory(const ModelConfig& config, int64_t batch) {
  // Fill every field of MemoryEstimate in bytes (float32: 4 bytes, int64 labels: 8):
  //   weights, gradients, optimizer_state (AdamW: how many float32 tensors per parameter?),
  //   batch (images + labels), activations (what each layer saves for backward: its ctx.saved
  //   in forward_impl; logits included), and peak: persistent + batch + the larger of the two
  //   moments of backward (the handout, "Where the peak is").
  // The tests compare against the allocator's measured bytes. About 14 lines.
  (void)config;
  (void)batch;
  throw gtl::Error("TODO(lab04) step 1: estimate_step_memory is not implemented");
}
// END TODO(lab04)

// TODO(lab04) step 1b: the same step under mixed precision, term by term.
MemoryEstimate estimate_step_memory(const ModelConfig& config, int64_t batch,
                                    const gtl::nn::PrecisionPolicy& policy) {
  // The core's AMP step (memory_lab.h, "1b"; the handout, "Under mixed precision"). In bytes:
  //   weights, gradients, compute_copy, optimizer_state: per element of the FLAT buffer, where
  //     each parameter tensor's slot is rounded up to 64 elements (which are float32, which
  //     half? what does AdamW step?); batch as in TODO 1;
  //   activations: op by op, which tensors each op saves and in which dtype (the handout's list);
  //   peak: persistent + batch + the largest of backward's moments (the handout lists the four):
  //     at each, which tensors are alive, in which dtype?
  // Self-contained: do not call TODO 1's functions. About 30 lines.
  (void)config;
  (void)batch;
  (void)policy;
  throw gtl::Error(
      "TODO(lab04) step 1b: estimate_step_memory under mixed precision is not "
      "implemented");
}
// END TODO(lab04)

}  // namespace lab04
