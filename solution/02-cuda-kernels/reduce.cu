// Lab 02, TODO 1: sum reduction, from naive to near the memory bandwidth.
//
//   naive   (provided) every thread atomicAdds its element into *out: correct, but all the
//           additions queue on one address, so it runs at the speed of one atomic unit.
//   shared  (1a) each block sums its blockDim.x elements as a tree of pairwise additions in
//           shared memory (log2(blockDim.x) levels, the additions of a level in parallel), then
//           one atomicAdd per block.
//   warp    (1b) the first levels of the tree inside a warp need neither shared memory nor
//           __syncthreads: __shfl_xor_sync passes registers between the 32 lanes directly
//           (block_reduce.cuh, also used by the softmax and layernorm kernels).
//   final   (1c) a fixed grid of a few blocks per SM; each thread first sums many elements in a
//           register (grid-stride loop), so the tree and the atomics run once per block, not
//           once per element: the kernel becomes a pure stream of loads, limited by DRAM.
#include <cuda_runtime.h>

#include <algorithm>

#include "block_reduce.cuh"
#include "kernels.h"

namespace lab02 {

namespace {

constexpr int kBlock = 256;

int grid_for(int64_t n, int per_thread = 1) {
  return static_cast<int>(std::max<int64_t>(
      1, (n + int64_t{kBlock} * per_thread - 1) / (int64_t{kBlock} * per_thread)));
}

int sm_count() {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  return sms;
}

__global__ void reduce_naive_kernel(const float* x, float* out, int64_t n) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i < n) atomicAdd(out, x[i]);
}

__global__ void reduce_shared_kernel(const float* x, float* out, int64_t n) {
  // SOLUTION(lab02) step 1a
  __shared__ float partial[kBlock];
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  partial[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  for (int active = blockDim.x / 2; active > 0; active /= 2) {
    if (threadIdx.x < active) partial[threadIdx.x] += partial[threadIdx.x + active];
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(out, partial[0]);
  // END SOLUTION(lab02)
}

__global__ void reduce_warp_kernel(const float* x, float* out, int64_t n) {
  // SOLUTION(lab02) step 1b
  __shared__ float scratch[kBlock / 32];
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const float total = block_reduce<false>(i < n ? x[i] : 0.f, scratch);
  if (threadIdx.x == 0) atomicAdd(out, total);
  // END SOLUTION(lab02)
}

__global__ void reduce_final_kernel(const float* x, float* out, int64_t n) {
  // SOLUTION(lab02) step 1c
  __shared__ float scratch[kBlock / 32];
  float acc = 0.f;
  // Vector loads of 4 floats where the pointer allows it, then the scalar tail.
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  const int64_t tid = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  const bool aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const int64_t n4 = aligned ? n / 4 : 0;
  const float4* x4 = reinterpret_cast<const float4*>(x);
  for (int64_t i = tid; i < n4; i += stride) {
    const float4 v = x4[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int64_t i = n4 * 4 + tid; i < n; i += stride) acc += x[i];
  const float total = block_reduce<false>(acc, scratch);
  if (threadIdx.x == 0) atomicAdd(out, total);
  // END SOLUTION(lab02)
}

}  // namespace

void reduce_sum_naive(const float* x, float* out, int64_t n, cudaStream_t stream) {
  cudaMemsetAsync(out, 0, sizeof(float), stream);
  if (n > 0) reduce_naive_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, out, n);
}

void reduce_sum_shared(const float* x, float* out, int64_t n, cudaStream_t stream) {
  cudaMemsetAsync(out, 0, sizeof(float), stream);
  if (n > 0) reduce_shared_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, out, n);
}

void reduce_sum_warp(const float* x, float* out, int64_t n, cudaStream_t stream) {
  cudaMemsetAsync(out, 0, sizeof(float), stream);
  if (n > 0) reduce_warp_kernel<<<grid_for(n), kBlock, 0, stream>>>(x, out, n);
}

void reduce_sum(const float* x, float* out, int64_t n, cudaStream_t stream) {
  cudaMemsetAsync(out, 0, sizeof(float), stream);
  if (n == 0) return;
  // Enough resident blocks to keep every SM's memory pipeline full, never more than needed.
  const int blocks = std::min(grid_for(n, 4), sm_count() * 8);
  reduce_final_kernel<<<blocks, kBlock, 0, stream>>>(x, out, n);
}

}  // namespace lab02
