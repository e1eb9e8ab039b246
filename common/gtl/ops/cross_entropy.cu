// CUDA path of cross-entropy and accuracy: one warp per row. The warp computes the row's
// stable softmax statistics in one pass (warp_max_sumexp: running max and rescaled sum), then
// either lane 0 writes the row's loss or every lane writes its columns of the gradient.
#include "gtl/ops/detail/cross_entropy_cuda.h"
#include "gtl/ops/detail/dispatch.h"
#include "gtl/ops/detail/warp_reduce.cuh"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

using cuda_detail::kFullMask;
using cuda_detail::kWarpSize;
constexpr int kThreads = 128;  // 4 warps, 4 rows per block
constexpr int kWarpsPerBlock = kThreads / kWarpSize;

#define GTL_FOR_EACH_WARP_ROW(row, rows)                                                           \
  for (int64_t row = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / kWarpSize; row < (rows); \
       row += int64_t{gridDim.x} * kWarpsPerBlock)

template <typename T, typename L>
__global__ void losses_kernel(const T* x, const L* labels, int64_t rows, int64_t cols,
                              float* losses) {
  GTL_FOR_EACH_WARP_ROW(row, rows) {
    const T* xr = x + row * cols;
    const cuda_detail::MaxSumExp st = cuda_detail::warp_max_sumexp(xr, cols);
    if (threadIdx.x % kWarpSize == 0) {
      const int64_t label = static_cast<int64_t>(labels[row]);
      const bool valid = label >= 0 && label < cols;
      losses[row] = valid ? logf(st.s) + (st.m - convert<float>(xr[label])) : NAN;
    }
  }
}

template <typename T, typename L>
__global__ void backward_kernel(const T* x, const L* labels, int64_t rows, int64_t cols,
                                float scale, T* dx) {
  GTL_FOR_EACH_WARP_ROW(row, rows) {
    const T* xr = x + row * cols;
    T* dxr = dx + row * cols;
    const cuda_detail::MaxSumExp st = cuda_detail::warp_max_sumexp(xr, cols);
    const int64_t label = static_cast<int64_t>(labels[row]);
    const float poison = (label >= 0 && label < cols) ? 0.f : NAN;
    const float inv_s = 1.f / st.s;
    for (int64_t c = threadIdx.x % kWarpSize; c < cols; c += kWarpSize) {
      const float p = expf(convert<float>(xr[c]) - st.m) * inv_s;
      dxr[c] = convert<T>(scale * (p - (c == label ? 1.f : 0.f)) + poison);
    }
  }
}

// Argmax with ties broken towards the smaller index (the CPU's and torch.argmax's rule): each
// lane scans its columns in order, then the lanes merge (value, index) pairs.
template <typename T, typename L>
__global__ void accuracy_kernel(const T* x, const L* labels, int64_t rows, int64_t cols,
                                float* correct) {
  GTL_FOR_EACH_WARP_ROW(row, rows) {
    const T* xr = x + row * cols;
    float best = -INFINITY;
    int64_t best_i = -1;
    for (int64_t c = threadIdx.x % kWarpSize; c < cols; c += kWarpSize) {
      const float v = convert<float>(xr[c]);
      if (best_i < 0 || v > best) {
        best = v;
        best_i = c;
      }
    }
    for (int offset = kWarpSize / 2; offset > 0; offset >>= 1) {
      const float other = __shfl_xor_sync(kFullMask, best, offset);
      const int64_t other_i = __shfl_xor_sync(kFullMask, best_i, offset);
      if (other_i >= 0 && (best_i < 0 || other > best || (other == best && other_i < best_i))) {
        best = other;
        best_i = other_i;
      }
    }
    if (threadIdx.x % kWarpSize == 0)
      correct[row] = best_i == static_cast<int64_t>(labels[row]) ? 1.f : 0.f;
  }
}

#undef GTL_FOR_EACH_WARP_ROW

}  // namespace

void cross_entropy_rows(const void* logits, DType dtype, const void* labels, DType label_dtype,
                        int64_t rows, int64_t cols, float* losses, cudaStream_t stream) {
  if (rows == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    GTL_DISPATCH_LABELS(label_dtype, L, {
      losses_kernel<T, L><<<launch::warp_row_blocks(rows, kThreads), kThreads, 0, stream>>>(
          static_cast<const T*>(logits), static_cast<const L*>(labels), rows, cols, losses);
    });
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void cross_entropy_backward(const void* logits, DType dtype, const void* labels, DType label_dtype,
                            int64_t rows, int64_t cols, float scale, void* dlogits,
                            cudaStream_t stream) {
  if (rows == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    GTL_DISPATCH_LABELS(label_dtype, L, {
      backward_kernel<T, L><<<launch::warp_row_blocks(rows, kThreads), kThreads, 0, stream>>>(
          static_cast<const T*>(logits), static_cast<const L*>(labels), rows, cols, scale,
          static_cast<T*>(dlogits));
    });
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void accuracy_rows(const void* logits, DType dtype, const void* labels, DType label_dtype,
                   int64_t rows, int64_t cols, float* correct, cudaStream_t stream) {
  if (rows == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    GTL_DISPATCH_LABELS(label_dtype, L, {
      accuracy_kernel<T, L><<<launch::warp_row_blocks(rows, kThreads), kThreads, 0, stream>>>(
          static_cast<const T*>(logits), static_cast<const L*>(labels), rows, cols, correct);
    });
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
