// Gradient clipping by global norm, as torch.nn.utils.clip_grad_norm_.
//
//   norm = sqrt(sum of every gradient element squared)     (ops::global_l2_norm)
//   coef = max_norm / (norm + 1e-6);  every gradient *= min(coef, 1)
//
// One coefficient for all gradients keeps the direction of the update and only shortens it: a
// single bad batch cannot throw the weights far. The norm is computed and applied on the device
// (the scaling kernel reads the norm from device memory), so clipping never waits for the GPU.
// A non-finite norm is treated as PyTorch does with error_if_nonfinite=False: an infinite norm
// gives coef 0 (finite gradients become 0, infinite ones NaN), a NaN norm a NaN coef (every
// gradient becomes NaN). Nothing is thrown; the returned norm shows it, and in fp16 training the
// loss scaler, whose unscale_ runs before clipping, has already flagged the step to be skipped.
#pragma once

#include <vector>

#include "gtl/optim/param.h"

namespace gtl::optim {

// Clips the gradients of `params` in place; returns the total norm before clipping, a float32
// tensor of shape [1] on the gradients' device (call .item() to log it: that synchronises).
Tensor clip_grad_norm_(const std::vector<ParamRef>& params, float max_norm);

// The second half of clip_grad_norm_: every gradient *= min(max_norm / (total_norm + 1e-6), 1),
// with total_norm a float32 [1] tensor on the gradients' device. Sharded training computes the
// norm over all ranks' shards first (dist::clip_grad_norm_ in dist/sharded_grads.h).
void scale_by_clip_coef_(const std::vector<ParamRef>& params, const Tensor& total_norm,
                         float max_norm);

}  // namespace gtl::optim
