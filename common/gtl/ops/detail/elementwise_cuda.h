// CUDA entry points of elementwise.cpp (internal). Pointers are untyped; `dtype` says what they
// hold. `out` may alias an input (the in-place ops). Every function enqueues on `stream`.
#pragma once

#include <cstdint>

#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl::ops::cuda {

enum class BinaryOp { Add, Mul };

void binary(BinaryOp op, const void* a, const void* b, void* out, DType dtype, int64_t n,
            cudaStream_t stream);
void scale(float alpha, const void* x, void* out, DType dtype, int64_t n, cudaStream_t stream);
void axpy(float alpha, const void* x, void* y, DType dtype, int64_t n, cudaStream_t stream);
void bias_add(const void* x, const void* bias, DType bias_dtype, void* out, DType dtype,
              int64_t rows, int64_t cols, cudaStream_t stream);

}  // namespace gtl::ops::cuda
