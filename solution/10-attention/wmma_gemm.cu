// Lab 10, TODO 4: a GEMM on the tensor cores.
//
// A tensor core multiplies small matrices in one instruction: on sm_80 and newer, a warp hands it
// a 16 x 16 tile of A and a 16 x 16 tile of B in 16-bit floats and gets A B added to a 16 x 16
// float32 accumulator. CUDA's WMMA API (mma.h) exposes that as three warp-collective calls:
// load_matrix_sync into a fragment, mma_sync, store_matrix_sync. Which lane holds which element
// of a fragment is unspecified: a kernel touches fragments only through those calls (and loops
// over all of x[] for elementwise work).
//
//   naive  (given) a warp per 16 x 16 tile of C, its A and B fragments loaded straight from
//          global memory: each element of A is loaded n / 16 times, of B m / 16 times.
//   tiled  (4a) a block per larger tile of C; its warps share the tiles of A and B that the
//          block stages in shared memory, each element loaded from global memory once per block.
//   fast   (4b) the tiled kernel plus one improvement from the handout's list.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "tensor_core_gemm.h"

namespace lab10 {

namespace {

using namespace nvcuda;

template <typename T>
using FragA = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>;
template <typename T>
using FragB = wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major>;
using Accumulator = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

constexpr int kNaiveWarps = 4;

template <typename T>
__global__ void wmma_naive_kernel(const T* a, const T* b, float* c, int m, int n, int k) {
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
  const int tiles_n = n / 16;
  const int row = warp / tiles_n * 16, col = warp % tiles_n * 16;
  if (row >= m) return;  // the whole warp leaves together: no lane misses a collective call
  Accumulator acc;
  wmma::fill_fragment(acc, 0.f);
  for (int kk = 0; kk < k; kk += 16) {
    FragA<T> fa;
    FragB<T> fb;
    wmma::load_matrix_sync(fa, a + size_t(row) * k + kk, k);
    wmma::load_matrix_sync(fb, b + size_t(kk) * n + col, n);
    wmma::mma_sync(acc, fa, fb, acc);
  }
  wmma::store_matrix_sync(c + size_t(row) * n + col, acc, n, wmma::mem_row_major);
}

template <typename T>
void launch_naive(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  const int tiles = (m / 16) * (n / 16);
  const int blocks = (tiles + kNaiveWarps - 1) / kNaiveWarps;
  wmma_naive_kernel<T><<<blocks, kNaiveWarps * 32, 0, stream>>>(a, b, c, m, n, k);
}

// SOLUTION(lab10) step 4a
// A block computes a 64 x 64 tile of C with 16 warps, one 16 x 16 fragment each. Per step of 32
// along k, the block stages A's 64 x 32 and B's 32 x 64 in shared memory. Rows are padded by 8
// elements (16 bytes) so that consecutive rows start in different banks; a fragment's first row
// is a multiple of 16 rows, so its address stays 32-byte aligned and ldm a multiple of 8.
constexpr int kTile = 64, kStep = 32, kPad = 8;

template <typename T>
__global__ void wmma_tiled_kernel(const T* a, const T* b, float* c, int m, int n, int k) {
  __shared__ __align__(32) T a_tile[kTile][kStep + kPad];
  __shared__ __align__(32) T b_tile[kStep][kTile + kPad];
  const int warp = threadIdx.x / 32;
  const int warp_row = warp / 4 * 16, warp_col = warp % 4 * 16;
  const int block_row = blockIdx.y * kTile, block_col = blockIdx.x * kTile;
  Accumulator acc;
  wmma::fill_fragment(acc, 0.f);
  for (int kk = 0; kk < k; kk += kStep) {
    // Rows and columns past the matrix are loaded as zeros: they add nothing to the tile.
    for (int e = threadIdx.x; e < kTile * kStep; e += blockDim.x) {
      const int r = e / kStep, s = e % kStep;
      const bool inside = block_row + r < m && kk + s < k;
      a_tile[r][s] = inside ? a[size_t(block_row + r) * k + kk + s] : T(0.f);
    }
    for (int e = threadIdx.x; e < kStep * kTile; e += blockDim.x) {
      const int s = e / kTile, col = e % kTile;
      const bool inside = kk + s < k && block_col + col < n;
      b_tile[s][col] = inside ? b[size_t(kk + s) * n + block_col + col] : T(0.f);
    }
    __syncthreads();
    for (int s = 0; s < kStep; s += 16) {
      FragA<T> fa;
      FragB<T> fb;
      wmma::load_matrix_sync(fa, &a_tile[warp_row][s], kStep + kPad);
      wmma::load_matrix_sync(fb, &b_tile[s][warp_col], kTile + kPad);
      wmma::mma_sync(acc, fa, fb, acc);
    }
    __syncthreads();  // the tiles are read before the next step overwrites them
  }
  const int row = block_row + warp_row, col = block_col + warp_col;
  if (row < m && col < n)
    wmma::store_matrix_sync(c + size_t(row) * n + col, acc, n, wmma::mem_row_major);
}

template <typename T>
void launch_tiled(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  const dim3 grid((n + kTile - 1) / kTile, (m + kTile - 1) / kTile);
  wmma_tiled_kernel<T><<<grid, 16 * 32, 0, stream>>>(a, b, c, m, n, k);
}
// END SOLUTION(lab10)

// SOLUTION(lab10) step 4b
// Larger warp tiles: a 128 x 128 block tile with 8 warps, each 64 x 32 (4 x 2 fragments). A warp
// loads 4 A fragments and 2 B fragments per 16 of k and makes 8 products with them, where 4a's
// warps load 2 fragments for 1 product: shared-memory traffic per product falls by 2.7x. The
// staging loads 16 bytes (8 elements) per thread per load.
constexpr int kBigTile = 128, kBigStep = 32, kBigPad = 8, kWarpRows = 4, kWarpCols = 2;

template <typename T>
__global__ void wmma_fast_kernel(const T* a, const T* b, float* c, int m, int n, int k) {
  __shared__ __align__(32) T a_tile[kBigTile][kBigStep + kBigPad];
  __shared__ __align__(32) T b_tile[kBigStep][kBigTile + kBigPad];
  const int warp = threadIdx.x / 32;
  const int warp_row = warp / 4 * (16 * kWarpRows), warp_col = warp % 4 * (16 * kWarpCols);
  const int block_row = blockIdx.y * kBigTile, block_col = blockIdx.x * kBigTile;
  Accumulator acc[kWarpRows][kWarpCols];
  for (auto& row : acc)
    for (Accumulator& f : row) wmma::fill_fragment(f, 0.f);
  constexpr int kVec = 8;  // elements per 16-byte load
  for (int kk = 0; kk < k; kk += kBigStep) {
    // m, n, k are multiples of 16, so a group of 8 elements is wholly inside or wholly outside.
    for (int e = threadIdx.x; e < kBigTile * kBigStep / kVec; e += blockDim.x) {
      const int r = e / (kBigStep / kVec), s = e % (kBigStep / kVec) * kVec;
      int4 v = make_int4(0, 0, 0, 0);
      if (block_row + r < m && kk + s < k)
        v = *reinterpret_cast<const int4*>(a + size_t(block_row + r) * k + kk + s);
      *reinterpret_cast<int4*>(&a_tile[r][s]) = v;
    }
    for (int e = threadIdx.x; e < kBigStep * kBigTile / kVec; e += blockDim.x) {
      const int s = e / (kBigTile / kVec), col = e % (kBigTile / kVec) * kVec;
      int4 v = make_int4(0, 0, 0, 0);
      if (kk + s < k && block_col + col < n)
        v = *reinterpret_cast<const int4*>(b + size_t(kk + s) * n + block_col + col);
      *reinterpret_cast<int4*>(&b_tile[s][col]) = v;
    }
    __syncthreads();
    for (int s = 0; s < kBigStep; s += 16) {
      FragA<T> fa[kWarpRows];
      FragB<T> fb[kWarpCols];
      for (int i = 0; i < kWarpRows; ++i)
        wmma::load_matrix_sync(fa[i], &a_tile[warp_row + 16 * i][s], kBigStep + kBigPad);
      for (int j = 0; j < kWarpCols; ++j)
        wmma::load_matrix_sync(fb[j], &b_tile[s][warp_col + 16 * j], kBigTile + kBigPad);
      for (int i = 0; i < kWarpRows; ++i)
        for (int j = 0; j < kWarpCols; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
    __syncthreads();
  }
  for (int i = 0; i < kWarpRows; ++i)
    for (int j = 0; j < kWarpCols; ++j) {
      const int row = block_row + warp_row + 16 * i, col = block_col + warp_col + 16 * j;
      if (row < m && col < n)
        wmma::store_matrix_sync(c + size_t(row) * n + col, acc[i][j], n, wmma::mem_row_major);
    }
}

template <typename T>
void launch_fast(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  const dim3 grid((n + kBigTile - 1) / kBigTile, (m + kBigTile - 1) / kBigTile);
  wmma_fast_kernel<T><<<grid, 8 * 32, 0, stream>>>(a, b, c, m, n, k);
}
// END SOLUTION(lab10)

}  // namespace

void wmma_gemm_naive(const __half* a, const __half* b, float* c, int m, int n, int k,
                     cudaStream_t stream) {
  launch_naive(a, b, c, m, n, k, stream);
}
void wmma_gemm_naive(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
                     cudaStream_t stream) {
  launch_naive(a, b, c, m, n, k, stream);
}
void wmma_gemm_tiled(const __half* a, const __half* b, float* c, int m, int n, int k,
                     cudaStream_t stream) {
  launch_tiled(a, b, c, m, n, k, stream);
}
void wmma_gemm_tiled(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
                     cudaStream_t stream) {
  launch_tiled(a, b, c, m, n, k, stream);
}
void wmma_gemm_fast(const __half* a, const __half* b, float* c, int m, int n, int k,
                    cudaStream_t stream) {
  launch_fast(a, b, c, m, n, k, stream);
}
void wmma_gemm_fast(const __nv_bfloat16* a, const __nv_bfloat16* b, float* c, int m, int n, int k,
                    cudaStream_t stream) {
  launch_fast(a, b, c, m, n, k, stream);
}

}  // namespace lab10
