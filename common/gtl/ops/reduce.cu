// CUDA path of the reductions, in two deterministic stages:
//   1. each block runs a grid-stride loop (each thread accumulates in a register), reduces its
//      threads with warp shuffles (block_reduce), and writes one partial;
//   2. one block reduces the partials.
// The number of blocks depends only on n, so the order of additions (and so the rounding) is
// the same on every run.
#include "gtl/ops/detail/reduce_cuda.h"
#include "gtl/ops/detail/warp_reduce.cuh"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

using cuda_detail::block_reduce;
using cuda_detail::nan_max;
constexpr int kThreads = launch::kThreadsPerBlock;
constexpr int64_t kMaxPartials = 1024;

// Step 1: one partial per block.
template <ReduceOp kOp, typename T>
__global__ void reduce_partials_kernel(const T* x, int64_t n, float* partials) {
  __shared__ float scratch[32];
  float acc = kOp == ReduceOp::Max ? -INFINITY : 0.f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const float v = convert<float>(x[i]);
    acc = kOp == ReduceOp::Max ? nan_max(acc, v) : acc + v;
  }
  acc = block_reduce<kOp == ReduceOp::Max>(acc, scratch);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// Step 2: one block folds the partials in a fixed order.
template <ReduceOp kOp>
__global__ void reduce_final_kernel(const float* partials, int64_t count, float multiplier,
                                    float* out) {
  __shared__ float scratch[32];
  float acc = kOp == ReduceOp::Max ? -INFINITY : 0.f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    acc = kOp == ReduceOp::Max ? nan_max(acc, partials[i]) : acc + partials[i];
  acc = block_reduce<kOp == ReduceOp::Max>(acc, scratch);
  if (threadIdx.x == 0) out[0] = kOp == ReduceOp::Max ? acc : acc * multiplier;
}

// Column sums: thread c of block (bx, chunk) adds rows [chunk * per_chunk, ...) of column c.
// Neighbouring threads read neighbouring columns of one row: coalesced.
template <typename T>
__global__ void sum_rows_partials_kernel(const T* x, int64_t rows, int64_t cols,
                                         int64_t rows_per_chunk, float* partials) {
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= cols) return;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
  float acc = 0.f;
  for (int64_t r = begin; r < end; ++r) acc += convert<float>(x[r * cols + c]);
  partials[blockIdx.y * cols + c] = acc;
}

__global__ void sum_rows_final_kernel(const float* partials, int64_t chunks, int64_t cols,
                                      float* out) {
  const int64_t c = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.f;
  for (int64_t k = 0; k < chunks; ++k) acc += partials[k * cols + c];
  out[c] = acc;
}

// Enough row chunks to give the GPU parallel work when there are few columns, few enough that
// the final pass stays cheap.
}  // namespace

int64_t reduce_partials_needed(int64_t n) {
  return launch::grid_stride_blocks(n, kThreads, kMaxPartials);
}

void reduce_all(ReduceOp op, const void* x, DType dtype, int64_t n, float multiplier,
                float* partials, float* out, cudaStream_t stream) {
  const int blocks = launch::grid_stride_blocks(n, kThreads, kMaxPartials);
  GTL_DISPATCH_FLOATING(dtype, T, {
    const T* xt = static_cast<const T*>(x);
    if (op == ReduceOp::Max) {
      reduce_partials_kernel<ReduceOp::Max, T><<<blocks, kThreads, 0, stream>>>(xt, n, partials);
    } else {
      reduce_partials_kernel<ReduceOp::Sum, T><<<blocks, kThreads, 0, stream>>>(xt, n, partials);
    }
  });
  GTL_CUDA_CHECK_LAUNCH();
  if (op == ReduceOp::Max) {
    reduce_final_kernel<ReduceOp::Max><<<1, 1024, 0, stream>>>(partials, blocks, multiplier, out);
  } else {
    reduce_final_kernel<ReduceOp::Sum><<<1, 1024, 0, stream>>>(partials, blocks, multiplier, out);
  }
  GTL_CUDA_CHECK_LAUNCH();
}

int64_t sum_rows_partials_needed(int64_t rows, int64_t cols) {
  const int64_t needed = launch::column_sum_chunks(rows) * cols;
  return needed > 0 ? needed : 1;
}

void sum_rows(const void* x, DType dtype, int64_t rows, int64_t cols, float* partials, float* out,
              cudaStream_t stream) {
  if (cols == 0) return;
  const int64_t chunks = launch::column_sum_chunks(rows);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  const dim3 grid(launch::blocks_to_cover(cols, kThreads), static_cast<unsigned>(chunks));
  GTL_DISPATCH_FLOATING(dtype, T, {
    sum_rows_partials_kernel<T><<<grid, kThreads, 0, stream>>>(static_cast<const T*>(x), rows, cols,
                                                               rows_per_chunk, partials);
  });
  GTL_CUDA_CHECK_LAUNCH();
  sum_rows_final_kernel<<<grid.x, kThreads, 0, stream>>>(partials, chunks, cols, out);
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
