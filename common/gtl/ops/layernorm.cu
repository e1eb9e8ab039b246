// CUDA path of LayerNorm.
//
// clang-format off
//   forward            one warp per row: sum -> mean, sum of squared deviations -> rstd (two
//                      passes, see layernorm.h), then write out. Lane 0 stores mean and rstd.
//   backward, dx       one warp per row: the two row means of dxhat and dxhat*xhat, then dx.
//   backward, dweight  column sums over rows, like sum_rows in reduce.cu: block (bx, chunk)
//   and dbias          sums a chunk of rows for 256 columns into partials; a second kernel adds
//                      the chunks in a fixed order (deterministic, no atomics).
// clang-format on
#include <cfloat>

#include "gtl/ops/detail/dispatch.h"
#include "gtl/ops/detail/layernorm_cuda.h"
#include "gtl/ops/detail/warp_reduce.cuh"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

using cuda_detail::kWarpSize;
using cuda_detail::warp_sum;
constexpr int kRowThreads = 128;  // 4 warps, 4 rows per block
constexpr int kWarpsPerBlock = kRowThreads / kWarpSize;
constexpr int kColThreads = launch::kThreadsPerBlock;

#define GTL_FOR_EACH_WARP_ROW(row, rows)                                                           \
  for (int64_t row = blockIdx.x * int64_t{kWarpsPerBlock} + threadIdx.x / kWarpSize; row < (rows); \
       row += int64_t{gridDim.x} * kWarpsPerBlock)

template <typename T, typename W>
__global__ void forward_kernel(const T* x, const W* weight, const W* bias, T* out, float* mean,
                               float* rstd, int64_t rows, int64_t cols, float eps) {
  const int lane = threadIdx.x % kWarpSize;
  GTL_FOR_EACH_WARP_ROW(row, rows) {
    const T* xr = x + row * cols;
    T* outr = out + row * cols;
    // Statistics of x - shift, shift = the row's first element: for inputs near 1e4 the float
    // sum of x itself loses ~1e-4 of the mean, and a mean rounded to float is off by half an
    // ulp of 1e4 (5e-4); x - shift is exact (nearby floats) and small, and so is its mean.
    const float shift = convert<float>(xr[0]);
    float s = 0.f, largest = 0.f;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float d = convert<float>(xr[c]) - shift;
      s += d;
      largest = cuda_detail::nan_max(largest, fabsf(d));
    }
    const float m_shifted = warp_sum(s) / static_cast<float>(cols);
    // The squares are taken of d / scale, scale = max(1, largest |x - shift|): a finite row whose
    // deviations pass ~1.8e19 (bfloat16 holds up to 3e38) would square to infinity in float, and
    // rstd would be 0 where the CPU's double statistics give the right one. Rows within 1 are
    // not scaled at all.
    const float row_largest = cuda_detail::warp_max(largest);
    const float scale = row_largest > 1.f && row_largest <= FLT_MAX ? row_largest : 1.f;
    const float inv_scale = 1.f / scale;
    float v = 0.f;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float d = ((convert<float>(xr[c]) - shift) - m_shifted) * inv_scale;
      v += d * d;
    }
    // 1 / sqrt(var + eps) with var = scale^2 * (sum of scaled squares) / cols.
    const float rs =
        rsqrtf(warp_sum(v) / static_cast<float>(cols) + eps * inv_scale * inv_scale) / scale;
    const float m = shift + m_shifted;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float xhat = ((convert<float>(xr[c]) - shift) - m_shifted) * rs;
      outr[c] = convert<T>(xhat * convert<float>(weight[c]) + convert<float>(bias[c]));
    }
    if (lane == 0) {
      mean[row] = m;
      rstd[row] = rs;
    }
  }
}

template <typename T, typename W>
__global__ void backward_dx_kernel(const T* dout, const T* x, const W* weight, const float* mean,
                                   const float* rstd, T* dx, int64_t rows, int64_t cols) {
  const int lane = threadIdx.x % kWarpSize;
  GTL_FOR_EACH_WARP_ROW(row, rows) {
    const T* xr = x + row * cols;
    const T* gr = dout + row * cols;
    T* dxr = dx + row * cols;
    const float m = mean[row], rs = rstd[row];
    float sum_dxhat = 0.f, sum_dxhat_xhat = 0.f;
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float xhat = (convert<float>(xr[c]) - m) * rs;
      const float dxhat = convert<float>(gr[c]) * convert<float>(weight[c]);
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
    }
    const float mean_dxhat = warp_sum(sum_dxhat) / static_cast<float>(cols);
    const float mean_dxhat_xhat = warp_sum(sum_dxhat_xhat) / static_cast<float>(cols);
    for (int64_t c = lane; c < cols; c += kWarpSize) {
      const float xhat = (convert<float>(xr[c]) - m) * rs;
      const float dxhat = convert<float>(gr[c]) * convert<float>(weight[c]);
      dxr[c] = convert<T>(rs * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
    }
  }
}

#undef GTL_FOR_EACH_WARP_ROW

// partials: [chunks][cols] of dweight, then [chunks][cols] of dbias.
template <typename T>
__global__ void backward_params_partials_kernel(const T* dout, const T* x, const float* mean,
                                                const float* rstd, int64_t rows, int64_t cols,
                                                int64_t chunks, int64_t rows_per_chunk,
                                                float* partials) {
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= cols) return;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  float dw = 0.f, db = 0.f;
  for (int64_t r = begin; r < end; ++r) {
    const float g = convert<float>(dout[r * cols + c]);
    dw += g * (convert<float>(x[r * cols + c]) - mean[r]) * rstd[r];
    db += g;
  }
  partials[blockIdx.y * cols + c] = dw;
  partials[(chunks + blockIdx.y) * cols + c] = db;
}

__global__ void backward_params_final_kernel(const float* partials, int64_t chunks, int64_t cols,
                                             float* dweight, float* dbias) {
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= cols) return;
  float dw = 0.f, db = 0.f;
  for (int64_t k = 0; k < chunks; ++k) {
    dw += partials[k * cols + c];
    db += partials[(chunks + k) * cols + c];
  }
  dweight[c] = dw;
  dbias[c] = db;
}

}  // namespace

void layernorm_forward(const void* x, const void* weight, const void* bias, DType weight_dtype,
                       void* out, float* mean, float* rstd, DType dtype, int64_t rows, int64_t cols,
                       float eps, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  GTL_DISPATCH_FLOATING(dtype, T, {
    GTL_DISPATCH_FLOATING(weight_dtype, W, {
      forward_kernel<T, W><<<launch::warp_row_blocks(rows, kRowThreads), kRowThreads, 0, stream>>>(
          static_cast<const T*>(x), static_cast<const W*>(weight), static_cast<const W*>(bias),
          static_cast<T*>(out), mean, rstd, rows, cols, eps);
    });
  });
  GTL_CUDA_CHECK_LAUNCH();
}

int64_t layernorm_backward_partials_needed(int64_t rows, int64_t cols) {
  const int64_t needed = 2 * launch::column_sum_chunks(rows) * cols;
  return needed > 0 ? needed : 1;
}

void layernorm_backward(const void* dout, const void* x, const void* weight, DType weight_dtype,
                        const float* mean, const float* rstd, void* dx, float* dweight,
                        float* dbias, float* partials, DType dtype, int64_t rows, int64_t cols,
                        cudaStream_t stream) {
  if (cols == 0) return;
  const int64_t chunks = launch::column_sum_chunks(rows);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 col_grid(launch::blocks_to_cover(cols, kColThreads), static_cast<unsigned>(chunks));
  GTL_DISPATCH_FLOATING(dtype, T, {
    const T* gt = static_cast<const T*>(dout);
    const T* xt = static_cast<const T*>(x);
    if (rows > 0) {
      GTL_DISPATCH_FLOATING(weight_dtype, W, {
        backward_dx_kernel<T, W>
            <<<launch::warp_row_blocks(rows, kRowThreads), kRowThreads, 0, stream>>>(
                gt, xt, static_cast<const W*>(weight), mean, rstd, static_cast<T*>(dx), rows, cols);
      });
      GTL_CUDA_CHECK_LAUNCH();
    }
    backward_params_partials_kernel<T><<<col_grid, kColThreads, 0, stream>>>(
        gt, xt, mean, rstd, rows, cols, chunks, rows_per_chunk, partials);
  });
  GTL_CUDA_CHECK_LAUNCH();
  backward_params_final_kernel<<<col_grid.x, kColThreads, 0, stream>>>(partials, chunks, cols,
                                                                       dweight, dbias);
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
