// The GPU path of ops::global_l2_norm (global_norm.cu); internal to ops, use global_l2_norm.
#pragma once

#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::ops::detail {

// Called by global_l2_norm for CUDA tensors.
Tensor global_l2_norm_cuda(const std::vector<Tensor>& tensors);

}  // namespace gtl::ops::detail
