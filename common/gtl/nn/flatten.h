// Flatten: [N, d1, d2, ...] -> [N, d1 * d2 * ...], between a CNN's convolutions and its Linear
// head.
//
// A view: it copies nothing, saves nothing (the input shape is in the Context anyway), and its
// backward is the reverse reshape.
#pragma once

#include "gtl/nn/module.h"

namespace gtl::nn {

class Flatten final : public Module {
 public:
  Flatten() : Module("flatten") {}
  // A view: no flops, no bytes moved.
  ComputeCost forward_cost(const Shape&) const override { return {}; }

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;
};

}  // namespace gtl::nn
