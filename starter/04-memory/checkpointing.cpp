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
  // The segment is children_.front(). Between forward and backward a checkpoint holds only its
  // input: a Context's tensors live as long as the Context. About 4 lines.
  (void)x;
  (void)ctx;
  throw gtl::Error("TODO(lab04) step 5a: Checkpoint::forward_impl is not implemented");
}

Tensor Checkpoint::backward_impl(gtl::nn::Context& ctx, const Tensor& dy, gtl::nn::GradMode mode) {
  // During its backward a checkpoint holds one segment's activations, and the hooks see each
  // module of the segment forward exactly twice per step. About 5 lines.
  (void)ctx;
  (void)dy;
  (void)mode;
  throw gtl::Error("TODO(lab04) step 5a: Checkpoint::backward_impl is not implemented");
}

std::unique_ptr<gtl::nn::Sequential> make_checkpointed_model(const ModelConfig& config,
                                                             int64_t every) {
  // The same model as make_model (same initial weights), built from gtl::nn::make_stage(config,
  // begin, end) pieces, its residual blocks in Checkpoints of `every` blocks (every == 0: none).
  // The layer layout is in models.h. Do NOT use ModelConfig::checkpoint or checkpoint_blocks
  // (the core's checkpointing). About 18 lines.
  (void)config;
  (void)every;
  throw gtl::Error("TODO(lab04) step 5a: make_checkpointed_model is not implemented");
}
// END TODO(lab04)

// TODO(lab04) step 5b: the sqrt(L) policy.
int64_t sqrt_segment_length(int64_t blocks) {
  // The handout's policy, for every blocks >= 1. About 5 lines.
  (void)blocks;
  throw gtl::Error("TODO(lab04) step 5b: sqrt_segment_length is not implemented");
}
// END TODO(lab04)

}  // namespace lab04
