// ActivationCheckpoint: activation checkpointing (gradient checkpointing) of one segment of a
// model.
//
//   seq.add(std::make_unique<nn::ActivationCheckpoint>(std::move(blocks)));
//
// Forward runs the wrapped segment and throws its activations away, keeping only the segment's
// input. Backward runs the segment's forward again from that input (recomputing the activations,
// now into a context that lives only until the segment's backward is done) and then its
// backward. Memory held between forward and backward drops from "every activation of the
// segment" to "its input"; the price is one extra forward of the segment (about a third more
// compute for the whole step). Checkpointing every block of an L-block stack bounds activation
// memory by L inputs plus one block's activations.
//
// The recomputation gives bitwise the same activations, since every op is deterministic (no
// dropout here), so the gradients equal those of the plain forward/backward exactly.
//
// What hooks see (module.h): the first forward fires before/after_forward for the
// ActivationCheckpoint module and every module of its segment, as without checkpointing. In
// backward they see before_backward(checkpointed), then the segment's forward AGAIN
// (before/after_forward of each of its modules; FSDP must gather the segment's weights again for
// it, a trace counts a second forward), with in_recomputation() true, then the segment's backward
// events (before_backward, grad_ready, after_backward), then after_backward(checkpointed). So each
// checkpointed module runs forward exactly twice per step, every other module once.
#pragma once

#include <memory>

#include "gtl/nn/module.h"
#include "gtl/nn/precision.h"

namespace gtl::nn {

// True while an ActivationCheckpoint module recomputes its segment's forward on this thread: a hook
// can tell the recomputation from the first forward.
bool in_recomputation();

class ActivationCheckpoint final : public Module {
 public:
  explicit ActivationCheckpoint(std::unique_ptr<Module> segment);
  Module& segment() const { return *children_.front(); }

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  PrecisionPolicy forward_policy_;  // the recomputation must round exactly as the forward did
};

}  // namespace gtl::nn
