// CUDA entry point of permute.cpp (internal).
#pragma once

#include "gtl/ops/detail/permute_dims.h"
#include "gtl/tensor/tensor.h"

namespace gtl::ops::cuda {

// y = x permuted as `d` describes (shapes checked, y allocated, y non-empty).
void permute(const Tensor& x, const Tensor& y, const detail::PermuteDims& d);

}  // namespace gtl::ops::cuda
