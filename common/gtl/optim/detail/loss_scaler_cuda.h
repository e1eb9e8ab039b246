// The fused unscale-and-check kernel launch (loss_scaler.cu); internal to optim, use LossScaler.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::optim::detail {

// g *= inv_scale; flag[0] = 1 if any result is non-finite.
void unscale_cuda(const Tensor& grad, float inv_scale, const Tensor& flag);

}  // namespace gtl::optim::detail
