// Lab 02, TODO 3: single-precision matrix multiply, C = A B (row-major), step by step.
//
//   naive           (provided) one thread per C element, the textbook mapping: threadIdx.x walks
//                   the rows. A warp's 32 threads then read 32 different rows of A and write 32
//                   rows of C: no load or store is coalesced, and every A and B value is fetched
//                   from memory once per use (2 M N K loads in all).
//   tiled           (3a) a block computes a 32x32 tile of C from 32x32 tiles of A and B staged in
//                   shared memory: each value loaded from global memory is used 32 times, and
//                   every global load and store of a warp is coalesced.
//   register tiled  (3b) a block computes 128x128 of C with 256 threads, each thread an 8x8 block
//                   held in registers. Per k step a thread reads 8 values of A and 8 of B from
//                   shared memory and does 64 multiply-adds: 4x the arithmetic per shared-memory
//                   load of the tiled kernel, so the FP32 units, not shared memory, set the pace,
//                   provided the layout keeps shared memory free of bank conflicts (3b's decision).
// Every version handles any M, N, K, and reads and writes nothing outside the three matrices.
#include <cuda_runtime.h>

#include "kernels.h"

namespace lab02 {

namespace {

__global__ void sgemm_naive_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  const int row =
      blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: rows k floats apart
  const int col = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc += a[int64_t{row} * k + i] * b[int64_t{i} * n + col];
  c[int64_t{row} * n + col] = acc;
}

constexpr int kTile = 32;

__global__ void sgemm_tiled_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  // SOLUTION(lab02) step 3a
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int col = blockIdx.x * kTile + threadIdx.x;
  const int row = blockIdx.y * kTile + threadIdx.y;
  float acc = 0.f;
  for (int k0 = 0; k0 < k; k0 += kTile) {
    const int ak = k0 + threadIdx.x, bk = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < m && ak < k) ? a[int64_t{row} * k + ak] : 0.f;
    bs[threadIdx.y][threadIdx.x] = (bk < k && col < n) ? b[int64_t{bk} * n + col] : 0.f;
    __syncthreads();
    for (int i = 0; i < kTile; ++i) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) c[int64_t{row} * n + col] = acc;
  // END SOLUTION(lab02)
}

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
constexpr int kThreadCols = kBN / kTN;               // 16 threads across a tile row
constexpr int kPadA = 4;  // padding for the rows of a transposed A tile in shared memory
static_assert(kBM % kTM == 0 && kBN % kTN == 0 && (kBM * kBK) % kThreads == 0 &&
                  (kBK * kBN) % kThreads == 0 && kThreadCols * kTN == kBN,
              "each thread owns a whole sub-tile and loads whole shares of the A and B tiles");
static_assert(kTM % 4 == 0 && (kBM + kPadA) % 4 == 0, "rows of as stay 16-byte aligned for float4");

// Two blocks per SM: the compiler keeps a thread within 128 registers (acc alone takes 64), and
// while one block waits at __syncthreads the other computes.
__global__ void __launch_bounds__(kThreads, 2)
    sgemm_register_tiled_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  // SOLUTION(lab02) step 3b
  __shared__ __align__(16) float as[kBK][kBM + kPadA];  // A transposed: as[k][m]
  __shared__ float bs[kBK][kBN];
  const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
  // Thread t owns rows thread_row * 8 + i and columns thread_col + 16 j of the block's tile.
  const int thread_row = threadIdx.x / kThreadCols, thread_col = threadIdx.x % kThreadCols;
  float acc[kTM][kTN] = {};
  float a_reg[kTM], b_reg[kTN];

  for (int k0 = 0; k0 < k; k0 += kBK) {
    // Eight threads read one row's 8 consecutive A values (a 32-byte sector), 32 threads one row
    // of B: every global load is fully used.
#pragma unroll
    for (int step = 0; step < kBM * kBK / kThreads; ++step) {
      const int i = threadIdx.x + step * kThreads;
      const int r = i / kBK, kk = i % kBK, gr = row0 + r, gk = k0 + kk;
      as[kk][r] = (gr < m && gk < k) ? a[int64_t{gr} * k + gk] : 0.f;
    }
#pragma unroll
    for (int step = 0; step < kBK * kBN / kThreads; ++step) {
      const int i = threadIdx.x + step * kThreads;
      const int kk = i / kBN, cc = i % kBN, gk = k0 + kk, gc = col0 + cc;
      bs[kk][cc] = (gk < k && gc < n) ? b[int64_t{gk} * n + gc] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      // A thread's 8 rows are contiguous: two 16-byte loads, the same for half the warp.
#pragma unroll
      for (int i = 0; i < kTM; i += 4) {
        const float4 v = *reinterpret_cast<const float4*>(&as[kk][thread_row * kTM + i]);
        a_reg[i] = v.x, a_reg[i + 1] = v.y, a_reg[i + 2] = v.z, a_reg[i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < kTN; ++j) b_reg[j] = bs[kk][thread_col + j * kThreadCols];
#pragma unroll
      for (int i = 0; i < kTM; ++i)
#pragma unroll
        for (int j = 0; j < kTN; ++j) acc[i][j] += a_reg[i] * b_reg[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int r = row0 + thread_row * kTM + i;
    if (r >= m) break;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int cc = col0 + thread_col + j * kThreadCols;  // 16 threads: 16 consecutive columns
      if (cc < n) c[int64_t{r} * n + cc] = acc[i][j];
    }
  }
  // END SOLUTION(lab02)
}

}  // namespace

void sgemm_naive(const float* a, const float* b, float* c, int m, int n, int k,
                 cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  const dim3 block(32, 8), grid((m + 31) / 32, (n + 7) / 8);
  sgemm_naive_kernel<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
}

void sgemm_tiled(const float* a, const float* b, float* c, int m, int n, int k,
                 cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  const dim3 block(kTile, kTile), grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  sgemm_tiled_kernel<<<grid, block, 0, stream>>>(a, b, c, m, n, k);
}

void sgemm_register_tiled(const float* a, const float* b, float* c, int m, int n, int k,
                          cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  const dim3 grid((n + kBN - 1) / kBN, (m + kBM - 1) / kBM);
  sgemm_register_tiled_kernel<<<grid, kThreads, 0, stream>>>(a, b, c, m, n, k);
}

}  // namespace lab02
