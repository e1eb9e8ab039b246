// Checkpointed: activation checkpointing (gradient checkpointing) of one segment of a model.
//
//   seq.add(std::make_unique<nn::Checkpointed>(std::move(blocks)));
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
// dropout here), so the gradients equal those of the plain forward/backward exactly. Hooks fire
// for the recomputed forward too (FSDP must gather the segment's weights again for it).
#pragma once

#include <memory>

#include "gtl/nn/module.h"
#include "gtl/nn/precision.h"

namespace gtl::nn {

class Checkpointed final : public Module {
 public:
  explicit Checkpointed(std::unique_ptr<Module> segment);
  Module& segment() const { return *children_.front(); }

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  PrecisionPolicy forward_policy_;  // the recomputation must round exactly as the forward did
};

}  // namespace gtl::nn
