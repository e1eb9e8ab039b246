// CUDA entry points of layernorm.cpp (internal): rows x cols, one warp per row; the weight
// (and bias) have dtype `weight_dtype` (float32 or x's dtype). mean, rstd, dweight, dbias and
// `partials` are float32.
#pragma once

#include <cstdint>

#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl::ops::cuda {

void layernorm_forward(const void* x, const void* weight, const void* bias, DType weight_dtype,
                       void* out, float* mean, float* rstd, DType dtype, int64_t rows, int64_t cols,
                       float eps, cudaStream_t stream);

// Scratch for the column sums of dweight and dbias.
int64_t layernorm_backward_partials_needed(int64_t rows, int64_t cols);
void layernorm_backward(const void* dout, const void* x, const void* weight, DType weight_dtype,
                        const float* mean, const float* rstd, void* dx, float* dweight,
                        float* dbias, float* partials, DType dtype, int64_t rows, int64_t cols,
                        cudaStream_t stream);

}  // namespace gtl::ops::cuda
