// CUDA entry points of softmax.cpp (internal): rows x cols, one warp per row.
#pragma once

#include <cstdint>

#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl::ops::cuda {

void softmax_forward(bool log, const void* x, void* y, DType dtype, int64_t rows, int64_t cols,
                     cudaStream_t stream);
void softmax_backward(bool log, const void* y, const void* dy, void* dx, DType dtype, int64_t rows,
                      int64_t cols, cudaStream_t stream);

}  // namespace gtl::ops::cuda
