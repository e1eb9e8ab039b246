// Gradient checks that must agree across ranks when each rank holds only a shard of the
// gradients (ZeRO-2, ZeRO-3 / FSDP).
//
// With DDP every rank holds every (averaged) gradient, so each rank's loss scaler and clipping
// see the same numbers and take the same decisions. Sharded, rank r unscales and clips only its
// own shard; left alone, rank 0 could skip a step for an inf that rank 2 never saw, and each rank
// would clip by the norm of its own shard. Both break "every rank holds the same model":
//
//   all_reduce_found_inf   the found-inf flag becomes the max over the group between
//                          unscale_ and step(): every rank skips the same steps.
//   clip_grad_norm_        the global norm is sqrt(sum over ranks of |shard|^2): every rank
//                          scales its shard by the same coefficient.
//
// Numerics: each rank's squared norm is rounded to float32 before the sum, so the sharded norm
// equals the unsharded one within float32 rounding (relative error about N * 6e-8), not bit for
// bit; with a group of one it IS the unsharded computation. CUDA: the square root is taken on the
// host (one synchronisation per step).
#pragma once

#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/optim/loss_scaler.h"
#include "gtl/optim/param.h"

namespace gtl::dist {

// Between scaler.unscale_(shard params) and scaler.step(): replaces the scaler's found-inf flag
// by its maximum over `group` (a rank whose shard holds no gradient contributes 0). No-op when the
// scaler is disabled. Every rank of the group must call it.
void all_reduce_found_inf(optim::LossScaler& scaler, Communicator& group, Device device);

// Clips this rank's shard of the gradients by the norm of ALL shards of the group; returns that
// global norm (float32 [1] on `device`). `shard_params` may be empty on a rank that owns only
// padding. Every rank of the group must call it.
Tensor clip_grad_norm_(const std::vector<optim::ParamRef>& shard_params, float max_norm,
                       Communicator& group, Device device);

}  // namespace gtl::dist
