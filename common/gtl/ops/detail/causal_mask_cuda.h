// CUDA entry point of causal_mask.cpp (internal).
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops::cuda {

// scores [n, tq, tk], non-empty, checked.
void causal_mask_(const Tensor& scores, int64_t n, int64_t tq, int64_t tk);

}  // namespace gtl::ops::cuda
