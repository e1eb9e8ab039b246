// Lab 02, TODO 2: matrix transpose through shared memory.
//
//   naive  (provided) thread (r, c) reads in[r][c] and writes out[c][r]: the reads of a warp are
//          consecutive (coalesced), but its writes are `rows` floats apart: 32 separate memory
//          transactions per warp store.
//   tiled  (2) a block loads a 32x32 tile with coalesced reads into shared memory, then writes it
//          transposed with coalesced writes, reading shared memory along columns. A tile of
//          32x33 (one float of padding per row) puts the 32 elements of a column in 32 different
//          banks: without it, they all fall in the same bank and the reads serialise 32-fold.
#include <cuda_runtime.h>

#include "kernels.h"

namespace lab02 {

namespace {

constexpr int kTile = 32, kRowsPerPass = 8;  // a block of 32 x 8 threads moves a 32 x 32 tile

__global__ void transpose_naive_kernel(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[int64_t{c} * rows + r] = in[int64_t{r} * cols + c];
}

__global__ void transpose_tiled_kernel(const float* in, float* out, int rows, int cols) {
  // SOLUTION(lab02) step 2
  __shared__ float tile[kTile][kTile + 1];
  const int c0 = blockIdx.x * kTile, r0 = blockIdx.y * kTile;
  for (int dy = threadIdx.y; dy < kTile; dy += kRowsPerPass) {
    const int r = r0 + dy, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[dy][threadIdx.x] = in[int64_t{r} * cols + c];
  }
  __syncthreads();
  // Output tile: rows are the input's columns c0.., columns the input's rows r0..
  for (int dy = threadIdx.y; dy < kTile; dy += kRowsPerPass) {
    const int out_r = c0 + dy, out_c = r0 + threadIdx.x;
    if (out_r < cols && out_c < rows) out[int64_t{out_r} * rows + out_c] = tile[threadIdx.x][dy];
  }
  // END SOLUTION(lab02)
}

}  // namespace

void transpose_naive(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 block(32, 8), grid((cols + 31) / 32, (rows + 7) / 8);
  transpose_naive_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
}

void transpose(const float* in, float* out, int rows, int cols, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  const dim3 block(kTile, kRowsPerPass),
      grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  transpose_tiled_kernel<<<grid, block, 0, stream>>>(in, out, rows, cols);
}

}  // namespace lab02
