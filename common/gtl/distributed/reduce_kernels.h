// Internal: the CUDA side of reduce.cpp (element-wise ring reduction and average division).
#pragma once

#include <cstdint>

#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl::dist::reduce_kernels {

// dst[i] = op(dst[i], src[i]); op is a gtl::dist::ReduceOp as int (Avg adds, like Sum).
void reduce_into(void* dst, const void* src, int64_t n, DType dtype, int op, cudaStream_t stream);
// dst[i] /= divisor (floating-point dtypes).
void divide(void* dst, int64_t n, DType dtype, int divisor, cudaStream_t stream);

}  // namespace gtl::dist::reduce_kernels
