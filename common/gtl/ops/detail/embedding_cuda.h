// CUDA entry points of embedding.cpp (internal). Shapes checked, tensors non-empty.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops::cuda {

void embedding(const Tensor& table, const Tensor& ids, const Tensor& rows);
void embedding_backward(const Tensor& drows, const Tensor& ids, const Tensor& dtable);

}  // namespace gtl::ops::cuda
