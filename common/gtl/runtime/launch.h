// Launch geometry of the core's CUDA kernels: the thread constants and the grid size of a launch,
// in one place so every .cu file sizes its grids the same way.
//
// The core's kernels come in three shapes, each with its helper:
// clang-format off
//   grid-stride loop   `for (i = global id; i < n; i += blockDim.x * gridDim.x)` is correct for
//                      any grid, so its grid is capped (grid_stride_blocks): enough blocks to fill
//                      the GPU, and no block that would only test `i < n` and exit.
//   one item a thread  `if (i >= n) return;` needs a thread for every item, so its grid is not
//                      capped (blocks_to_cover).
//   one warp a row     a block of `threads` runs threads / 32 rows at a time, in a grid-stride
//                      loop over the rows (warp_row_blocks).
// clang-format on
// Every helper returns at least one block: a launch of zero blocks is an error
// (cudaErrorInvalidConfiguration), so an empty tensor launches one block that does nothing.
//
// Plain host C++ (no CUDA header), so it is included from .cu files and compiles in every build.
#pragma once

#include <cstdint>

#include "gtl/runtime/error.h"

namespace gtl::launch {

constexpr int kWarpSize = 32;
constexpr unsigned kFullWarpMask = 0xffffffffu;

// Threads per block of an elementwise kernel: 8 warps, a multiple of the warp size that keeps
// every SM full on each GPU generation from sm_75 on.
constexpr int kThreadsPerBlock = 256;

// The cap of a grid-stride loop unless its kernel chooses another: 65535 * 8 blocks of 256 threads
// are far more than any GPU runs at once, so the loop rarely takes a second turn.
constexpr int64_t kMaxGridStrideBlocks = 65535 * 8;

// The row cap of a one-warp-a-row kernel (the grid-stride loop over rows takes the rest).
constexpr int64_t kMaxRowBlocks = 65535;

// The largest grid.x a launch accepts (2^31 - 1 on every GPU the course supports).
constexpr int64_t kMaxGridX = 2147483647;

// ceil(n / threads), at least 1.
constexpr int64_t blocks_needed(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return blocks < 1 ? 1 : blocks;
}

// Blocks of a grid-stride loop over n items: in [1, max_blocks].
constexpr int grid_stride_blocks(int64_t n, int threads = kThreadsPerBlock,
                                 int64_t max_blocks = kMaxGridStrideBlocks) {
  const int64_t blocks = blocks_needed(n, threads);
  return static_cast<int>(blocks < max_blocks ? blocks : max_blocks);
}

// Blocks of a kernel that runs one thread per item and has no loop: every item gets a thread.
inline unsigned blocks_to_cover(int64_t n, int threads = kThreadsPerBlock) {
  const int64_t blocks = blocks_needed(n, threads);
  GTL_CHECK(blocks <= kMaxGridX, "launch: " << n << " items need " << blocks << " blocks of "
                                            << threads << " threads, more than a grid holds ("
                                            << kMaxGridX
                                            << "); the kernel needs a grid-stride loop");
  return static_cast<unsigned>(blocks);
}

// Blocks of a one-warp-a-row kernel with `threads` per block over `rows` rows.
constexpr int warp_row_blocks(int64_t rows, int threads) {
  return grid_stride_blocks(rows, threads / kWarpSize, kMaxRowBlocks);
}

// Chunks of a column sum over `rows` rows (sum_rows, layernorm's dweight/dbias): block (x, chunk)
// adds 64 rows of its columns into a partial, at most 512 chunks, and a second kernel adds the
// partials in a fixed order, so the rounding never depends on scheduling.
constexpr int64_t column_sum_chunks(int64_t rows) {
  return grid_stride_blocks(rows, 64, 512);
}

}  // namespace gtl::launch
