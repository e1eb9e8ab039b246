// GPU kernels behind Tensor's creation and conversion functions (tensor_kernels.cu).
// Internal to the core: use the Tensor API instead.
#pragma once

#include <cstdint>

#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl::tensor_kernels {

void fill(void* data, DType dtype, int64_t n, double value, cudaStream_t stream);
void arange(void* data, DType dtype, int64_t n, cudaStream_t stream);
void cast(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
          cudaStream_t stream);
void uniform(void* data, DType dtype, int64_t n, uint64_t seed, uint64_t offset, float low,
             float high, cudaStream_t stream);
void normal(void* data, DType dtype, int64_t n, uint64_t seed, uint64_t offset, float mean,
            float std, cudaStream_t stream);

}  // namespace gtl::tensor_kernels
