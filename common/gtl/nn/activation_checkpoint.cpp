// Activation checkpointing: forget in forward, recompute in backward (see activation_checkpoint.h).
#include "gtl/nn/activation_checkpoint.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

namespace gtl::nn {

namespace {
thread_local int recomputing_depth =
    0;  // nested ActivationCheckpoint segments recompute inside each other

struct RecomputeScope {
  RecomputeScope() { ++recomputing_depth; }
  ~RecomputeScope() { --recomputing_depth; }
  RecomputeScope(const RecomputeScope&) = delete;
  RecomputeScope& operator=(const RecomputeScope&) = delete;
};
}  // namespace

bool in_recomputation() {
  return recomputing_depth > 0;
}

ActivationCheckpoint::ActivationCheckpoint(std::unique_ptr<Module> segment)
    : Module("activation_checkpoint") {
  add_child("segment", std::move(segment));
}

Tensor ActivationCheckpoint::forward_impl(const Tensor& x, Context& ctx) {
  gtl::grading::reference_guard("gtl::nn::ActivationCheckpoint::forward");
  forward_policy_ = current_precision();
  Context scratch;  // the segment's activations: released when this function returns
  Tensor y = segment().forward(x, scratch);
  ctx.saved = {x};
  return y;
}

Tensor ActivationCheckpoint::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  gtl::grading::reference_guard("gtl::nn::ActivationCheckpoint::backward");
  PrecisionScope same_policy(forward_policy_);
  Context recomputed;
  {
    RecomputeScope recomputing;
    segment().forward(ctx.saved.at(0), recomputed);
  }
  return segment().backward(recomputed, dy, mode);
}

}  // namespace gtl::nn
