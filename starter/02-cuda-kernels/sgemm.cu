// Lab 02, TODO 3: single-precision matrix multiply, C = A B (row-major), step by step.
//
//   naive           (provided) one thread per C element, K loads of A and B from DRAM each:
//                   2 M N K loads in total, so it is limited by memory, not arithmetic.
//   tiled           (3a) a block computes a 32x32 tile of C; A and B tiles of 32x32 are staged
//                   in shared memory and each loaded value is used 32 times: 32x fewer DRAM loads.
//   register tiled  (3b) a block computes 128x128 of C with 256 threads, each thread an 8x8
//                   sub-block held in registers. Per k step a thread loads 8 values of A and 8 of
//                   B from shared memory and does 64 multiply-adds: arithmetic intensity per
//                   shared-memory load rises 8x, and the kernel approaches the FP32 peak.
// Every version handles any M, N, K (edges are zero-filled on load and masked on store).
#include <cuda_runtime.h>

#include "kernels.h"

namespace lab02 {

namespace {

__global__ void sgemm_naive_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;  // consecutive threads: consecutive B, C
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc += a[int64_t{row} * k + i] * b[int64_t{i} * n + col];
  c[int64_t{row} * n + col] = acc;
}

constexpr int kTile = 32;

__global__ void sgemm_tiled_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  // TODO(lab02) step 3a: two __shared__ kTile x kTile tiles, for A and B. Thread (ty, tx) owns
  // C[row][col], row = blockIdx.y * kTile + ty, col = blockIdx.x * kTile + tx. For each k0 in
  // steps of kTile: load A[row][k0 + tx] and B[k0 + ty][col] (0 outside the matrices),
  // __syncthreads(), accumulate the 32 products from shared memory, __syncthreads() again before
  // the next load. Store C[row][col] if inside.
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k;
}

constexpr int kBM = 128, kBN = 128, kBK = 8, kTM = 8, kTN = 8;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);  // 256
static_assert(kBM % kTM == 0 && kBN % kTN == 0 && (kBM * kBK) % kThreads == 0 &&
                  (kBK * kBN) % kThreads == 0,
              "each thread owns a whole sub-tile and loads whole shares of the A and B tiles");

__global__ void __launch_bounds__(kThreads)
    sgemm_register_tiled_kernel(const float* a, const float* b, float* c, int m, int n, int k) {
  // TODO(lab02) step 3b: the block computes the kBM x kBN tile of C at (blockIdx.y * kBM,
  // blockIdx.x * kBN) with kThreads = 256 threads; thread t computes a kTM x kTN = 8 x 8 sub-tile
  // (thread_row = t / (kBN / kTN), thread_col = t % (kBN / kTN)) held in float acc[kTM][kTN].
  // For each k0 in steps of kBK = 8:
  //   - all threads cooperatively load the kBM x kBK tile of A into __shared__ as[kBK][kBM]
  //     (transposed: as[k][m]) and the kBK x kBN tile of B into bs[kBK][kBN], zero outside;
  //   - __syncthreads();
  //   - for each kk < kBK: copy the thread's 8 values of as[kk][...] and 8 of bs[kk][...] into
  //     registers, then do the 64 multiply-adds of their outer product into acc;
  //   - __syncthreads().
  // Store acc with bounds checks. #pragma unroll on the small loops keeps acc in registers.
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k;
}

}  // namespace

void sgemm_naive(const float* a, const float* b, float* c, int m, int n, int k,
                 cudaStream_t stream) {
  if (m == 0 || n == 0) return;
  const dim3 block(32, 8), grid((n + 31) / 32, (m + 7) / 8);
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
