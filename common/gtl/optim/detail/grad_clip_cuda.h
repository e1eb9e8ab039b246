// The clip-scaling kernel launch (grad_clip.cu); internal to optim, use optim::clip_grad_norm_.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::optim::detail {

// grad *= min(coef(norm), 1), reading norm[0] on the device.
void scale_by_clip_coef_cuda(const Tensor& grad, const Tensor& norm, float max_norm);

}  // namespace gtl::optim::detail
