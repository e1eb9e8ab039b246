// Small CUDA kernels that exercise the CPU emulator (common/emulator/cuda_emulator.h), behind host
// wrappers that emulator_test.cpp calls. Each wrapper launches on host memory (the emulator's
// device memory) and returns when the kernel is done. The kernels are in emulator_kernels.cu.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>  // dim3, cudaStream_t: the emulator's own in this test

namespace emutest {

constexpr unsigned kFullMask = 0xffffffffu;

// ---- 1. index variables -------------------------------------------------------------------------
// For every thread of the launch, kIndexFields values at out[id * kIndexFields], where id is the
// thread's linear id in the grid (blocks in x, y, z order, threads in x, y, z order inside each):
// id, threadIdx.xyz, blockIdx.xyz, blockDim.xyz, gridDim.xyz.
constexpr int kIndexFields = 13;
void write_indices(dim3 grid, dim3 block, unsigned* out);

// ---- 2. __syncthreads ---------------------------------------------------------------------------
// out[i] = in[left neighbour] + in[right neighbour] inside each block of `threads` (<= 256),
// exchanged through shared memory, with or without the __syncthreads between write and read.
void neighbour_sum(const float* in, float* out, int blocks, int threads, bool with_barrier);
// out[i] = in[i + offset] (offset -1 or +1) inside each block, through shared memory, with NO
// __syncthreads between write and read; a block's first (offset -1) or last (+1) thread reads its
// own value.
void neighbour_without_barrier(const float* in, float* out, int blocks, int threads, int offset);
// out[b] = sum of block b's `threads` inputs (a power of two <= 256), a tree in shared memory
// with a __syncthreads after every level.
void tree_sum(const float* in, float* out, int blocks, int threads);
// Blocks of 64 threads (two warps). Every thread finds its block's maximum (warp shuffles, then
// the warps' partial maxima through shared memory) and writes it to max_seen[i]; then the same
// shared scratch is reused for the block's sum, written to sums[b]. Without the barrier between
// the two reductions a warp can overwrite a partial maximum another warp has yet to read.
void max_then_sum(const float* in, float* max_seen, float* sums, int blocks, bool with_barrier);

// ---- 3. warp shuffles ---------------------------------------------------------------------------
enum class Shuffle { kXor, kDown, kUp, kIndex };
// out[i] = __shfl_<kind>_sync(kFullMask, in[i], arg, width), for blocks of `threads`.
void shuffle(Shuffle kind, const float* in, float* out, int arg, int width, int blocks,
             int threads);
void shuffle(Shuffle kind, const double* in, double* out, int arg, int width, int blocks,
             int threads);
// A butterfly: for (m = first_mask; m > 0; m /= 2) v += __shfl_xor_sync(kFullMask, v, m).
void xor_reduce(const int* in, int* out, int first_mask, int blocks, int threads);
// The usual tree: for (d = 16; d > 0; d /= 2) v += __shfl_down_sync(kFullMask, v, d).
void down_reduce(const int* in, int* out, int blocks, int threads);

// ---- 4. dynamic shared memory -------------------------------------------------------------------
// out[i] = in[mirror of i in its block] + 2 * in[right neighbour], through
// `extern __shared__ float smem[]` of 2 * threads floats (the third launch parameter).
void mirror_plus_neighbour(const float* in, float* out, int blocks, int threads);
// out[i] = in[i] * 3 through `extern __shared__ float4 quads[]`: threads float4 per block, loaded
// and stored as float4 (16-byte aligned, or the alignment sanitizer stops the test).
void triple_float4(const float4* in, float4* out, int blocks, int threads);
// The same kernel as mirror_plus_neighbour, launched with `smem_floats` floats of dynamic shared
// memory instead of 2 * threads (too few: the death test).
void mirror_plus_neighbour_smem(const float* in, float* out, int blocks, int threads,
                                int smem_floats);

// ---- 5. launch validation -----------------------------------------------------------------------
// Every thread of the launch adds 1 to *count.
void count_threads(dim3 grid, dim3 block, int* count);

// ---- 6. template kernels and kernels in namespaces ----------------------------------------------
// y[i] = 3 * x[i], by emutest::detail::scale_kernel<float, 3>, launched qualified from the
// global namespace with a configuration holding static_cast<int>(...).
void scale_by_3(const float* x, float* y, int n, cudaStream_t stream);
// y[i] += a * x[i] for any n, by a grid-stride template kernel (double), launched over lines.
void axpy(double a, const double* x, double* y, int64_t n, cudaStream_t stream);
// out[i] = in[i + 1 in the block, wrapping] through `extern __shared__ T buf[]` in a template.
void rotate_left(const double* in, double* out, int blocks, int threads);
void rotate_left(const int* in, int* out, int blocks, int threads);

// ---- 7. atomics ---------------------------------------------------------------------------------
// Every thread of blocks x threads (id = its linear id, n of them):
//   atomicAdd(float_sum, 0.5f); atomicAdd(unsigned_count, 1);
//   tickets[atomicAdd(int_count, 1)] = id; atomicAdd(&histogram[id % bins], 1);
//   atomicMax(max_id, id); atomicMin(min_id, id); a compare-and-swap loop adding 2 to *cas_sum;
//   atomicAdd(cas_seen_sum, atomicCAS(cas_unchanged, -7, id)): the compare fails, nothing swaps.
struct AtomicCounters {
  float float_sum = 0;
  unsigned unsigned_count = 0;
  int int_count = 0;
  int max_id = -1;
  int min_id = 1 << 30;
  int cas_sum = 0;
  int cas_unchanged = 7;
  int cas_seen_sum = 0;
};
void atomics(AtomicCounters* counters, int* tickets, int* histogram, int bins, int blocks,
             int threads);

// ---- 8. bugs the emulator must stop (death tests) -----------------------------------------------
// Block 1's threads >= 16 return before a __syncthreads the others reach.
void barrier_after_early_exit(int blocks, int threads);
// Lanes 0-15 wait at __syncthreads, lanes 16-31 at a full-mask shuffle.
void barrier_and_shuffle_diverge();
// `if (i >= n) return;` before a full-mask warp reduction, n not a multiple of 32.
void shuffle_after_lanes_exit(const float* in, float* out, int n);
// A shuffle with a mask other than 0xffffffff (not emulated).
void shuffle_with_partial_mask(float* out);
// out[i] = in[i + 1] for i < n: reads in[n], one past the end.
void read_one_past_end(const float* in, float* out, int n);
// out[i] = in[i] for every thread of ceil(n / 64) blocks of 64, with no `if (i < n)`.
void write_without_bounds_check(const float* in, float* out, int n);
// A static `__shared__ float s[64]` indexed by threadIdx.x in a block of `threads`.
void static_shared_overflow(const float* in, float* out, int threads);
// Loads in + offset_floats as float4 (misaligned unless offset_floats % 4 == 0).
void load_float4(const float* in, float* out, int offset_floats);

}  // namespace emutest
