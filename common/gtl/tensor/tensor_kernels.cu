// GPU kernels for tensor creation and dtype conversion. Each is a grid-stride loop: any n,
// any grid size, one element per thread per iteration.
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/detail/tensor_kernels_cuda.h"
#include "gtl/tensor/dispatch.h"
#include "gtl/tensor/philox.h"

namespace gtl::tensor_kernels {

namespace {

using launch::grid_stride_blocks;
using launch::kThreadsPerBlock;

template <typename T>
__global__ void fill_kernel(T* p, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    p[i] = value;
}

template <typename T>
__global__ void arange_kernel(T* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    p[i] = convert<T>(i);
}

template <typename S, typename D>
__global__ void cast_kernel(const S* s, D* d, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    d[i] = convert<D>(s[i]);
}

template <typename T>
__global__ void uniform_kernel(T* p, int64_t n, uint64_t seed, uint64_t offset, float low,
                               float high) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    p[i] = convert<T>(philox::to_range(philox::uniform(seed, offset + i), low, high));
}

template <typename T>
__global__ void normal_kernel(T* p, int64_t n, uint64_t seed, uint64_t offset, float mean,
                              float std) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    p[i] = convert<T>(mean + std * philox::normal(seed, offset + i));
}

}  // namespace

void fill(void* data, DType dtype, int64_t n, double value, cudaStream_t stream) {
  GTL_DISPATCH_ALL(dtype, T, {
    fill_kernel<T><<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(static_cast<T*>(data), n,
                                                                           convert<T>(value));
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void arange(void* data, DType dtype, int64_t n, cudaStream_t stream) {
  GTL_DISPATCH_ALL(dtype, T, {
    arange_kernel<T>
        <<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(static_cast<T*>(data), n);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void cast(const void* src, DType src_dtype, void* dst, DType dst_dtype, int64_t n,
          cudaStream_t stream) {
  if (n == 0) return;
  GTL_DISPATCH_ALL(src_dtype, S, {
    GTL_DISPATCH_ALL(dst_dtype, D, {
      cast_kernel<S, D><<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(
          static_cast<const S*>(src), static_cast<D*>(dst), n);
    });
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void uniform(void* data, DType dtype, int64_t n, uint64_t seed, uint64_t offset, float low,
             float high, cudaStream_t stream) {
  if (n == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    uniform_kernel<T><<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(
        static_cast<T*>(data), n, seed, offset, low, high);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void normal(void* data, DType dtype, int64_t n, uint64_t seed, uint64_t offset, float mean,
            float std, cudaStream_t stream) {
  if (n == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    normal_kernel<T><<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(
        static_cast<T*>(data), n, seed, offset, mean, std);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::tensor_kernels
