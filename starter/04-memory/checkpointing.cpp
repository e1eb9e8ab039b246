// Lab 04, TODO 5: activation checkpointing of segments of the lab model.
#include <cmath>

#include "gtl/nn/sequential.h"
#include "memory_lab.h"

namespace lab04 {

Checkpoint::Checkpoint(std::unique_ptr<gtl::nn::Module> segment) : Module("checkpoint") {
  add_child("segment", std::move(segment));
}

// TODO(lab04) step 5a: the Checkpoint module and the model built from it.
Tensor Checkpoint::forward_impl(const Tensor& x, gtl::nn::Context& ctx) {
  // Run the segment (children_.front()) forward into a LOCAL Context that dies here; keep only
  // the input in ctx.saved. About 4 lines.
  (void)x;
  (void)ctx;
  throw gtl::Error("TODO(lab04) step 5a: Checkpoint::forward_impl is not implemented");
}

Tensor Checkpoint::backward_impl(gtl::nn::Context& ctx, const Tensor& dy, gtl::nn::GradMode mode) {
  // Recompute the segment's forward from the saved input into a fresh Context, release the
  // saved input, and run the segment's backward on the recomputed context. About 5 lines.
  (void)ctx;
  (void)dy;
  (void)mode;
  throw gtl::Error("TODO(lab04) step 5a: Checkpoint::backward_impl is not implemented");
}

std::unique_ptr<gtl::nn::Sequential> make_checkpointed_model(const ModelConfig& config,
                                                             int64_t every) {
  // Build the model from gtl::nn::make_stage(config, begin, end) pieces (the same initial
  // weights as make_model): layers 0-1, then the residual blocks (layers 2 .. 2 + blocks) in
  // segments of `every`, each wrapped in a Checkpoint (every == 0: one plain stage), then the
  // head up to gtl::nn::num_layers(config). Do NOT use ModelConfig::checkpoint or
  // checkpoint_blocks (the core's checkpointing). About 18 lines.
  (void)config;
  (void)every;
  throw gtl::Error("TODO(lab04) step 5a: make_checkpointed_model is not implemented");
}
// END TODO(lab04)

// TODO(lab04) step 5b: the sqrt(L) policy.
int64_t sqrt_segment_length(int64_t blocks) {
  // The smallest k with k * k >= blocks, in integers (careful with floating-point sqrt).
  // About 5 lines.
  (void)blocks;
  throw gtl::Error("TODO(lab04) step 5b: sqrt_segment_length is not implemented");
}
// END TODO(lab04)

}  // namespace lab04
