// The widening / rounding copy kernel launch (master_weights.cu); use detail::convert_into.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::optim::detail {

// dst = convert(src) on the GPU, on the current stream; no allocation, no synchronisation.
void convert_into_cuda(const Tensor& src, const Tensor& dst);

}  // namespace gtl::optim::detail
