// CUDA kernels of the ring reduction: one grid-stride loop per step, on the caller's stream.
// Same arithmetic as the CPU loop in reduce.cpp (16-bit floats combine in float).
#include <algorithm>
#include <type_traits>

#include "gtl/distributed/communicator.h"
#include "gtl/distributed/reduce_kernels.h"
#include "gtl/distributed/reduce_ops.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::dist::reduce_kernels {

namespace {

template <typename T>
__global__ void reduce_kernel(T* dst, const T* src, int64_t n, int op) {
  using Acc = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const Acc a = convert<Acc>(dst[i]), b = convert<Acc>(src[i]);
    Acc r;
    if (op == static_cast<int>(ReduceOp::Max)) {
      r = detail::nan_max(a, b);
    } else if (op == static_cast<int>(ReduceOp::Min)) {
      r = detail::nan_min(a, b);
    } else {
      r = static_cast<Acc>(a + b);
    }
    dst[i] = convert<T>(r);
  }
}

template <typename T>
__global__ void divide_kernel(T* dst, int64_t n, int divisor) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    dst[i] = convert<T>(convert<float>(dst[i]) / divisor);
  }
}

// A grid-stride loop over at most 4096 blocks; at least one block, so an empty chunk (a ring
// chunk of a tensor smaller than the world) is a valid launch that does nothing.
int grid_for(int64_t n) {
  return launch::grid_stride_blocks(n, launch::kThreadsPerBlock, 4096);
}

}  // namespace

void reduce_into(void* dst, const void* src, int64_t n, DType dtype, int op, cudaStream_t stream) {
  GTL_DISPATCH_ALL(dtype, T, {
    reduce_kernel<T><<<grid_for(n), launch::kThreadsPerBlock, 0, stream>>>(
        static_cast<T*>(dst), static_cast<const T*>(src), n, op);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void divide(void* dst, int64_t n, DType dtype, int divisor, cudaStream_t stream) {
  GTL_DISPATCH_FLOATING(dtype, T, {
    divide_kernel<T>
        <<<grid_for(n), launch::kThreadsPerBlock, 0, stream>>>(static_cast<T*>(dst), n, divisor);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::dist::reduce_kernels
