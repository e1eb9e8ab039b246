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

// TODO(lab10) step 4a: launch_tiled, the GEMM of tensor_core_gemm.h with the tiles of A and B
// staged in shared memory: a block computes a tile of C of several warps' fragments (one 16 x 16
// fragment of C per warp: more per warp is one of 4b's options), its warps share what the block
// loaded, and each element of A and B is read from global memory once per block.
// The block and warp tiles, the step along k and the shared-memory layout are yours; so is what
// the block does with rows and columns of C past the matrix (m and n are multiples of 16, not of
// your tile). The layout must keep every fragment pointer 32-byte aligned and every ldm a multiple
// of 16 bytes (the emulator stops the program otherwise; a GPU computes garbage). Hint: draw one
// block's tiles, mark which warp reads what, then count the bytes it stages per step. About 45
// lines.
template <typename T>
void launch_tiled(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k, (void)stream;
}
// END TODO(lab10)

// TODO(lab10) step 4b: launch_fast, your 4a with one improvement from the handout's list, chosen
// after reading what limits 4a (the handout's questions). Say in a comment which one you chose and
// what it changes in the bytes or instructions per product. Same contract, same tests as 4a; the
// speed check compares it with cuBLAS. About 60 lines.
template <typename T>
void launch_fast(const T* a, const T* b, float* c, int m, int n, int k, cudaStream_t stream) {
  (void)a, (void)b, (void)c, (void)m, (void)n, (void)k, (void)stream;
}
// END TODO(lab10)

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
