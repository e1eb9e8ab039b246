// CUDA entry points of reduce.cpp (internal). Outputs are float32. `partials` is float32
// scratch of at least partials_needed(...) elements, allocated by the caller through the
// tensor allocator (never cudaMalloc in an op).
#pragma once

#include <cstdint>

#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl::ops::cuda {

enum class ReduceOp { Sum, Max };

int64_t reduce_partials_needed(int64_t n);
// out[0] = sum or max of x[0..n), times `multiplier` for Sum (1/n gives the mean).
void reduce_all(ReduceOp op, const void* x, DType dtype, int64_t n, float multiplier,
                float* partials, float* out, cudaStream_t stream);

int64_t sum_rows_partials_needed(int64_t rows, int64_t cols);
// out[c] = sum_r x[r * cols + c].
void sum_rows(const void* x, DType dtype, int64_t rows, int64_t cols, float* partials, float* out,
              cudaStream_t stream);

}  // namespace gtl::ops::cuda
