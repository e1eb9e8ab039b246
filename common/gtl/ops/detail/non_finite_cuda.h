// The GPU path of ops::non_finite_flag_ (non_finite.cu); internal to ops, use non_finite_flag_.
#pragma once

#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::ops::detail {

// One kernel launch per tensor, all raising the same flag.
void non_finite_flag_cuda(const std::vector<Tensor>& tensors, const Tensor& flag);

}  // namespace gtl::ops::detail
