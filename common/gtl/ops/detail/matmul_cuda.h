// The cuBLAS path of ops::matmul_out (matmul.cu). Internal to the core: use matmul.h.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops::cuda {

// c = alpha * op(a) op(b) + beta * c on c's GPU, on current_stream(). Shapes already checked.
void matmul(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a, bool transpose_b,
            float alpha, float beta, int64_t m, int64_t k, int64_t n);

// The batched form: `batch` products of [M, K] x [K, N] matrices stored back to back.
void batched_matmul(const Tensor& a, const Tensor& b, const Tensor& c, bool transpose_a,
                    bool transpose_b, float alpha, float beta, int64_t batch, int64_t m, int64_t k,
                    int64_t n);

}  // namespace gtl::ops::cuda
