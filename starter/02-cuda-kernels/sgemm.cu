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
  // TODO(lab02) step 3a: the block owns the kTile x kTile tile of C that the launcher's grid
  // (below) gives it and writes each of its elements once, for any M, N and K, nothing outside C.
  // K is walked in kTile-wide slices staged in shared memory, so that each element of A and B the
  // block needs comes from global memory once. Decide which thread computes which element of C
  // and which thread loads which tile entry, so that every global load and store of a warp is
  // coalesced (handout: Coalescing), and what a tile holds past the edges of the matrices.
  // Hint: for one slice of K and the next, list who writes each tile entry and who reads it.
  // About 14 lines.
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k;
  // END TODO(lab02)
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
  // TODO(lab02) step 3b: the block computes the kBM x kBN tile of C at (blockIdx.y * kBM,
  // blockIdx.x * kBN) with kThreads = 256 threads, each thread kTM x kTN = 8 x 8 results in
  // registers (float acc[kTM][kTN]). For each kBK-wide slice of K, the threads stage the A tile
  // (transposed, so that a thread's 8 values of one k are contiguous: two float4 loads) and the
  // B tile in shared memory, 0 outside the matrices, and add the outer products into acc.
  // Constraints (the sgemm-vs-cublas bar needs them): no shared-memory bank conflicts on the B
  // reads nor on the transposing A stores, and coalesced C stores. Decide which rows and columns
  // of the tile a thread owns, and the shapes of the shared arrays (kPadA is there to use).
  // Hints: count shared-memory traffic per multiply-add (handout); #pragma unroll on the small
  // loops keeps acc in registers; bounds-check the stores. About 50 lines.
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k;
  // END TODO(lab02)
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
