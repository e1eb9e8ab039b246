// CUDA entry points of cross_entropy.cpp (internal): rows x cols logits, one warp per row.
// Labels are int32 or int64 (`label_dtype`).
#pragma once

#include <cstdint>

#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl::ops::cuda {

// losses[r] = cross-entropy of row r (NaN for a label outside [0, cols)).
void cross_entropy_rows(const void* logits, DType dtype, const void* labels, DType label_dtype,
                        int64_t rows, int64_t cols, float* losses, cudaStream_t stream);
// dlogits[r, j] = scale * (softmax_rj - [j == label_r]).
void cross_entropy_backward(const void* logits, DType dtype, const void* labels, DType label_dtype,
                            int64_t rows, int64_t cols, float scale, void* dlogits,
                            cudaStream_t stream);
// correct[r] = 1 if argmax of row r equals its label, else 0.
void accuracy_rows(const void* logits, DType dtype, const void* labels, DType label_dtype,
                   int64_t rows, int64_t cols, float* correct, cudaStream_t stream);

}  // namespace gtl::ops::cuda
