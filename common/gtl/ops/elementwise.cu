// CUDA path of the element-wise ops. Each kernel is a grid-stride loop: thread i handles
// elements i, i + stride, i + 2*stride, ... so any n runs on a fixed, modest grid, and
// neighbouring threads touch neighbouring elements (coalesced loads and stores).
#include "gtl/ops/detail/elementwise_cuda.h"
#include "gtl/ops/detail/warp_reduce.cuh"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

using launch::kThreadsPerBlock;
constexpr int64_t kMaxBlocks = 4096;

#define GTL_GRID_STRIDE_LOOP(i, n)                                          \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += int64_t{blockDim.x} * gridDim.x)

template <typename T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, T* out, int64_t n) {
  GTL_GRID_STRIDE_LOOP(i, n) {
    const float x = convert<float>(a[i]), y = convert<float>(b[i]);
    out[i] = convert<T>(op == BinaryOp::Add ? x + y : x * y);
  }
}

template <typename T>
__global__ void scale_kernel(float alpha, const T* x, T* out, int64_t n) {
  GTL_GRID_STRIDE_LOOP(i, n) {
    out[i] = convert<T>(alpha * convert<float>(x[i]));
  }
}

template <typename T>
__global__ void axpy_kernel(float alpha, const T* x, T* y, int64_t n) {
  GTL_GRID_STRIDE_LOOP(i, n) {
    y[i] = convert<T>(convert<float>(y[i]) + alpha * convert<float>(x[i]));
  }
}

template <typename T, typename B>
__global__ void bias_add_kernel(const T* x, const B* bias, T* out, int64_t rows, int64_t cols) {
  GTL_GRID_STRIDE_LOOP(i, rows * cols) {
    out[i] = convert<T>(convert<float>(x[i]) + convert<float>(bias[i % cols]));
  }
}

#undef GTL_GRID_STRIDE_LOOP

}  // namespace

void binary(BinaryOp op, const void* a, const void* b, void* out, DType dtype, int64_t n,
            cudaStream_t stream) {
  if (n == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    binary_kernel<T><<<launch::grid_stride_blocks(n, kThreadsPerBlock, kMaxBlocks),
                       kThreadsPerBlock, 0, stream>>>(
        op, static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void scale(float alpha, const void* x, void* out, DType dtype, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    scale_kernel<T><<<launch::grid_stride_blocks(n, kThreadsPerBlock, kMaxBlocks), kThreadsPerBlock,
                      0, stream>>>(alpha, static_cast<const T*>(x), static_cast<T*>(out), n);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void axpy(float alpha, const void* x, void* y, DType dtype, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    axpy_kernel<T><<<launch::grid_stride_blocks(n, kThreadsPerBlock, kMaxBlocks), kThreadsPerBlock,
                     0, stream>>>(alpha, static_cast<const T*>(x), static_cast<T*>(y), n);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void bias_add(const void* x, const void* bias, DType bias_dtype, void* out, DType dtype,
              int64_t rows, int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  const int blocks = launch::grid_stride_blocks(rows * cols, kThreadsPerBlock, kMaxBlocks);
  GTL_DISPATCH_FLOATING(dtype, T, {
    GTL_DISPATCH_FLOATING(bias_dtype, B, {
      bias_add_kernel<T, B><<<blocks, kThreadsPerBlock, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const B*>(bias), static_cast<T*>(out), rows, cols);
    });
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
