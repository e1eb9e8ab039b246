// CUDA entry points of activations.cpp (internal). `dout` is null for the forward ops.
#pragma once

#include <cstdint>

#include "gtl/runtime/stream.h"
#include "gtl/tensor/dtype.h"

namespace gtl::ops::cuda {

enum class Activation { Relu, Gelu };

void activation_forward(Activation act, const void* x, void* out, DType dtype, int64_t n,
                        cudaStream_t stream);
void activation_backward(Activation act, const void* x, const void* dout, void* dx, DType dtype,
                         int64_t n, cudaStream_t stream);

}  // namespace gtl::ops::cuda
