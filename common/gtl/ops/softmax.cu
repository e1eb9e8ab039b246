// CUDA path of softmax and log-softmax: one warp per row, rows spread over the grid.
//
// A warp per row keeps every reduction inside the warp (shuffles, no shared memory, no
// __syncthreads) and reads each row with 32 consecutive lanes (coalesced). The forward pass
// reads the row twice: once for the online (max, sum) statistics (warp_max_sumexp), once to
// write the output; the second read mostly hits L1/L2.
#include "gtl/ops/detail/softmax_cuda.h"
#include "gtl/ops/detail/warp_reduce.cuh"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

using cuda_detail::kWarpSize;
using cuda_detail::warp_sum;
constexpr int kThreads = 128;  // 4 warps, 4 rows per block
constexpr int kWarpsPerBlock = kThreads / kWarpSize;

template <bool kLog, typename T>
__global__ void forward_kernel(const T* x, T* y, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarpSize;
  for (int64_t row = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / kWarpSize; row < rows;
       row += int64_t{gridDim.x} * kWarpsPerBlock) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    const cuda_detail::MaxSumExp st = cuda_detail::warp_max_sumexp(xr, cols);
    if (kLog) {
      const float log_s = logf(st.s);
      for (int64_t c = lane; c < cols; c += kWarpSize)
        yr[c] = convert<T>((convert<float>(xr[c]) - st.m) - log_s);
    } else {
      const float inv_s = 1.f / st.s;
      for (int64_t c = lane; c < cols; c += kWarpSize)
        yr[c] = convert<T>(expf(convert<float>(xr[c]) - st.m) * inv_s);
    }
  }
}

template <bool kLog, typename T>
__global__ void backward_kernel(const T* y, const T* dy, T* dx, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarpSize;
  for (int64_t row = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / kWarpSize; row < rows;
       row += int64_t{gridDim.x} * kWarpsPerBlock) {
    const T* yr = y + row * cols;
    const T* dyr = dy + row * cols;
    T* dxr = dx + row * cols;
    float dot = 0.f;  // softmax: sum dy*y; log_softmax: sum dy
    for (int64_t c = lane; c < cols; c += kWarpSize)
      dot += kLog ? convert<float>(dyr[c]) : convert<float>(dyr[c]) * convert<float>(yr[c]);
    dot = warp_sum(dot);
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float yv = convert<float>(yr[c]), g = convert<float>(dyr[c]);
      dxr[c] = convert<T>(kLog ? g - expf(yv) * dot : yv * (g - dot));
    }
  }
}

}  // namespace

void softmax_forward(bool log, const void* x, void* y, DType dtype, int64_t rows, int64_t cols,
                     cudaStream_t stream) {
  if (rows * cols == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    const T* xt = static_cast<const T*>(x);
    T* yt = static_cast<T*>(y);
    if (log) {
      forward_kernel<true, T>
          <<<launch::warp_row_blocks(rows, kThreads), kThreads, 0, stream>>>(xt, yt, rows, cols);
    } else {
      forward_kernel<false, T>
          <<<launch::warp_row_blocks(rows, kThreads), kThreads, 0, stream>>>(xt, yt, rows, cols);
    }
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void softmax_backward(bool log, const void* y, const void* dy, void* dx, DType dtype, int64_t rows,
                      int64_t cols, cudaStream_t stream) {
  if (rows * cols == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    const T* yt = static_cast<const T*>(y);
    const T* gt = static_cast<const T*>(dy);
    T* dt = static_cast<T*>(dx);
    if (log) {
      backward_kernel<true, T><<<launch::warp_row_blocks(rows, kThreads), kThreads, 0, stream>>>(
          yt, gt, dt, rows, cols);
    } else {
      backward_kernel<false, T><<<launch::warp_row_blocks(rows, kThreads), kThreads, 0, stream>>>(
          yt, gt, dt, rows, cols);
    }
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
