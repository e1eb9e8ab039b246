// Lab 02, TODO 5: LayerNorm forward.
//
// For each row: mean = sum(x) / C, var = sum((x - mean)^2) / C, rstd = 1 / sqrt(var + eps),
// y = (x - mean) * rstd * weight + bias. mean and rstd are saved for the backward pass.
//
//   naive  (provided) one thread per row: uncoalesced, as in the naive softmax; sums in double.
//   block  (5) one block per row: coalesced loads, several in flight per thread (as in the
//          softmax), the row's statistics through block reductions, and a variance that stays
//          accurate in float32 when |mean| >> std. A read of the row after the first comes from
//          L1/L2, not HBM.
//   backward (5b) dx, derived from the forward by hand: one block per row as in the forward.
//          dweight and dbias are sums over the rows, one per column: the kernel that computes
//          them must read memory coalesced and give the same bits on every run (no atomics).
#include <cuda_runtime.h>

#include "block_reduce.cuh"
#include "kernels.h"

namespace lab02 {

namespace {

__global__ void layernorm_naive_kernel(const float* x, const float* w, const float* b, float* y,
                                       float* mean_out, float* rstd_out, int rows, int cols,
                                       float eps) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const float* xr = x + int64_t{r} * cols;
  // A running float sum of thousands of values near 1e4 loses digits at every step (its ulp
  // grows with it): the baseline sums in double, to be slow but accurate.
  double sum = 0.0;
  for (int c = 0; c < cols; ++c) sum += xr[c];
  const float mean = static_cast<float>(sum / cols);
  double sq = 0.0;
  for (int c = 0; c < cols; ++c) sq += (xr[c] - mean) * (xr[c] - mean);
  const float rstd = rsqrtf(static_cast<float>(sq / cols) + eps);
  for (int c = 0; c < cols; ++c) y[int64_t{r} * cols + c] = (xr[c] - mean) * rstd * w[c] + b[c];
  mean_out[r] = mean;
  rstd_out[r] = rstd;
}

constexpr int kBlock = 256, kUnroll = 4;
static_assert(kBlock % 32 == 0 && kUnroll >= 1, "block_reduce needs whole warps");

__global__ void layernorm_block_kernel(const float* x, const float* w, const float* b, float* y,
                                       float* mean_out, float* rstd_out, int cols, float eps) {
  // SOLUTION(lab02) step 5
  __shared__ float scratch[kBlock / 32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float* yr = y + row * cols;
  // Calls f(c, x[c]) on this thread's strided part of the row, with 4 loads in flight.
  auto for_each = [&](auto f) {
    for (int c0 = threadIdx.x; c0 < cols; c0 += kUnroll * kBlock) {
      float v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + u * kBlock;
        v[u] = c < cols ? xr[c] : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u)
        if (c0 + u * kBlock < cols) f(c0 + u * kBlock, v[u]);
    }
  };
  float sum = 0.f;
  for_each([&](int, float v) { sum += v; });
  const float mean = block_reduce<false>(sum, scratch) / cols;
  float sq = 0.f;
  for_each([&](int, float v) { sq += (v - mean) * (v - mean); });
  const float rstd = rsqrtf(block_reduce<false>(sq, scratch) / cols + eps);
  for_each([&](int c, float v) { yr[c] = (v - mean) * rstd * w[c] + b[c]; });
  if (threadIdx.x == 0) {
    mean_out[row] = mean;
    rstd_out[row] = rstd;
  }
  // END SOLUTION(lab02)
}

__global__ void layernorm_backward_dx_kernel(const float* dy, const float* x, const float* w,
                                             const float* mean, const float* rstd, float* dx,
                                             int cols) {
  // SOLUTION(lab02) step 5b
  __shared__ float scratch[kBlock / 32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  const float* dyr = dy + row * cols;
  const float m = mean[row], rs = rstd[row];
  float sum_dxhat = 0.f, sum_dxhat_xhat = 0.f;
  for (int c = threadIdx.x; c < cols; c += kBlock) {
    const float dxhat = dyr[c] * w[c];
    sum_dxhat += dxhat;
    sum_dxhat_xhat += dxhat * (xr[c] - m) * rs;
  }
  const float mean_dxhat = block_reduce<false>(sum_dxhat, scratch) / cols;
  const float mean_dxhat_xhat = block_reduce<false>(sum_dxhat_xhat, scratch) / cols;
  for (int c = threadIdx.x; c < cols; c += kBlock)
    dx[row * cols + c] = rs * (dyr[c] * w[c] - mean_dxhat - (xr[c] - m) * rs * mean_dxhat_xhat);
  // END SOLUTION(lab02)
}

__global__ void layernorm_backward_params_kernel(const float* dy, const float* x, const float* mean,
                                                 const float* rstd, float* dweight, float* dbias,
                                                 int rows, int cols) {
  // SOLUTION(lab02) step 5b
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float sum_w = 0.f, sum_b = 0.f;
  for (int r = 0; r < rows; ++r) {
    const int64_t i = int64_t{r} * cols + c;
    sum_w += dy[i] * (x[i] - mean[r]) * rstd[r];
    sum_b += dy[i];
  }
  dweight[c] = sum_w;
  dbias[c] = sum_b;
  // END SOLUTION(lab02)
}

}  // namespace

void layernorm_naive(const float* x, const float* weight, const float* bias, float* y, float* mean,
                     float* rstd, int rows, int cols, float eps, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  layernorm_naive_kernel<<<(rows + 127) / 128, 128, 0, stream>>>(x, weight, bias, y, mean, rstd,
                                                                 rows, cols, eps);
}

void layernorm(const float* x, const float* weight, const float* bias, float* y, float* mean,
               float* rstd, int rows, int cols, float eps, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  layernorm_block_kernel<<<rows, kBlock, 0, stream>>>(x, weight, bias, y, mean, rstd, cols, eps);
}

void layernorm_backward(const float* dy, const float* x, const float* weight, const float* mean,
                        const float* rstd, float* dx, float* dweight, float* dbias, int rows,
                        int cols, cudaStream_t stream) {
  if (cols == 0) return;
  if (rows > 0)
    layernorm_backward_dx_kernel<<<rows, kBlock, 0, stream>>>(dy, x, weight, mean, rstd, dx, cols);
  // With no rows the sums are 0: the parameter kernel writes them all the same.
  layernorm_backward_params_kernel<<<(cols + kBlock - 1) / kBlock, kBlock, 0, stream>>>(
      dy, x, mean, rstd, dweight, dbias, rows, cols);
}

}  // namespace lab02
