// Kernels for emulator_test.cpp, written as ordinary CUDA: in the emulated build CMake copies this
// file, rewriting every kernel<<<...>>>(...) launch and `extern __shared__` array
// (cmake/GtlEmulator.cmake), and compiles it as C++ with cuda_emulator.h forced in. Some kernels
// are wrong on purpose (the missing barriers, the death-test kernels): their comments say so.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "emulator_kernels.h"

namespace emutest {

namespace {

constexpr int kMaxThreads = 256;  // the static shared arrays' size

// ---- 1. index variables -------------------------------------------------------------------------
__global__ void write_indices_kernel(unsigned* out) {
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned id = block * threads + thread;
  // A by-value parameter is each thread's own copy: moving it must not move the others'.
  out += size_t{id} * kIndexFields;
  const unsigned fields[kIndexFields] = {
      id,         threadIdx.x, threadIdx.y, threadIdx.z, blockIdx.x, blockIdx.y, blockIdx.z,
      blockDim.x, blockDim.y,  blockDim.z,  gridDim.x,   gridDim.y,  gridDim.z};
  for (int k = 0; k < kIndexFields; ++k) out[k] = fields[k];
}

// ---- 2. __syncthreads ---------------------------------------------------------------------------
template <bool kBarrier>
__global__ void neighbour_sum_kernel(const float* in, float* out) {
  __shared__ float s[kMaxThreads];
  const int t = threadIdx.x, n = blockDim.x;
  const int i = blockIdx.x * n + t;
  s[t] = in[i];
  if (kBarrier) __syncthreads();  // without it a neighbour's s[] may not be written yet
  out[i] = s[(t + n - 1) % n] + s[(t + 1) % n];
}

// WRONG on purpose: the read of a neighbour's slot needs a __syncthreads before it.
template <int kOffset>
__global__ void neighbour_without_barrier_kernel(const float* in, float* out) {
  __shared__ float s[kMaxThreads];
  const int t = threadIdx.x, n = blockDim.x;
  const int i = blockIdx.x * n + t;
  s[t] = in[i];
  const int j = t + kOffset;
  out[i] = j >= 0 && j < n ? s[j] : s[t];
}

__global__ void tree_sum_kernel(const float* in, float* out) {
  __shared__ float s[kMaxThreads];
  const int t = threadIdx.x;
  s[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (int active = blockDim.x / 2; active > 0; active /= 2) {
    if (t < active) s[t] += s[t + active];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

__device__ float warp_max(float v) {
  for (int m = 16; m > 0; m /= 2) v = max(v, __shfl_xor_sync(kFullMask, v, m));
  return v;
}

__device__ float warp_sum(float v) {
  for (int m = 16; m > 0; m /= 2) v += __shfl_xor_sync(kFullMask, v, m);
  return v;
}

// The shape of a softmax's two block reductions sharing one scratch array.
template <bool kBarrier>
__global__ void max_then_sum_kernel(const float* in, float* max_seen, float* sums) {
  __shared__ float scratch[kMaxThreads / 32];
  const int t = threadIdx.x, lane = t % 32, warp = t / 32, warps = blockDim.x / 32;
  const int i = blockIdx.x * blockDim.x + t;
  const float v = in[i];
  float m = warp_max(v);
  if (lane == 0) scratch[warp] = m;
  __syncthreads();
  m = scratch[0];
  for (int w = 1; w < warps; ++w) m = max(m, scratch[w]);
  max_seen[i] = m;
  // Every warp must have read the partial maxima before any warp overwrites them with its sum.
  if (kBarrier) __syncthreads();
  const float s = warp_sum(v);
  if (lane == 0) scratch[warp] = s;
  __syncthreads();
  if (t == 0) {
    float total = 0;
    for (int w = 0; w < warps; ++w) total += scratch[w];
    sums[blockIdx.x] = total;
  }
}

// ---- 3. warp shuffles ---------------------------------------------------------------------------
template <typename T>
__global__ void shuffle_kernel(const T* in, T* out, Shuffle kind, int arg, int width) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const T v = in[i];
  T r = v;
  switch (kind) {
    case Shuffle::kXor:
      r = __shfl_xor_sync(kFullMask, v, arg, width);
      break;
    case Shuffle::kDown:
      r = __shfl_down_sync(kFullMask, v, arg, width);
      break;
    case Shuffle::kUp:
      r = __shfl_up_sync(kFullMask, v, arg, width);
      break;
    case Shuffle::kIndex:
      r = __shfl_sync(kFullMask, v, arg, width);
      break;
  }
  out[i] = r;
}

__global__ void xor_reduce_kernel(const int* in, int* out, int first_mask) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  for (int m = first_mask; m > 0; m /= 2) v += __shfl_xor_sync(kFullMask, v, m);
  out[i] = v;
}

__global__ void down_reduce_kernel(const int* in, int* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(kFullMask, v, d);
  out[i] = v;
}

// ---- 4. dynamic shared memory -------------------------------------------------------------------
__global__ void mirror_plus_neighbour_kernel(const float* in, float* out) {
  extern __shared__ float smem[];
  const int t = threadIdx.x, n = blockDim.x;
  const int i = blockIdx.x * n + t;
  float* copy = smem;
  float* doubled = smem + n;  // the second half: 2 * n floats in all
  copy[t] = in[i];
  doubled[t] = 2 * in[i];
  __syncthreads();
  out[i] = copy[n - 1 - t] + doubled[(t + 1) % n];
}

__global__ void triple_float4_kernel(const float4* in, float4* out) {
  extern __shared__ float4 quads[];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  quads[t] = in[i];
  __syncthreads();
  const float4 q = quads[t];
  out[i] = make_float4(3 * q.x, 3 * q.y, 3 * q.z, 3 * q.w);
}

// ---- 5. launch validation -----------------------------------------------------------------------
__global__ void count_threads_kernel(int* count) {
  atomicAdd(count, 1);
}

// ---- 7. atomics ---------------------------------------------------------------------------------
__global__ void atomics_kernel(AtomicCounters* c, int* tickets, int* histogram, int bins) {
  const int id = blockIdx.x * blockDim.x + threadIdx.x;
  atomicAdd(&c->float_sum, 0.5f);
  atomicAdd(&c->unsigned_count, 1);  // an int literal into an unsigned counter, as CUDA allows
  tickets[atomicAdd(&c->int_count, 1)] = id;
  atomicAdd(&histogram[id % bins], 1);
  atomicMax(&c->max_id, id);
  atomicMin(&c->min_id, id);
  int old = c->cas_sum, assumed;
  do {
    assumed = old;
    old = atomicCAS(&c->cas_sum, assumed, assumed + 2);
  } while (old != assumed);
  atomicAdd(&c->cas_seen_sum, atomicCAS(&c->cas_unchanged, -7, id));
}

// ---- 8. bugs the emulator must stop -------------------------------------------------------------
__global__ void barrier_after_early_exit_kernel() {
  if (blockIdx.x == 1 && threadIdx.x >= 16) return;  // WRONG: these never reach the barrier
  __syncthreads();
}

__global__ void barrier_and_shuffle_diverge_kernel(float* out) {
  float v = threadIdx.x;
  if (threadIdx.x < 16)
    __syncthreads();  // WRONG: lanes 16-31 wait at the shuffle, lanes 0-15 here
  else
    v = __shfl_xor_sync(kFullMask, v, 1);
  out[threadIdx.x] = v;
}

__global__ void shuffle_after_lanes_exit_kernel(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;  // WRONG before a full-mask shuffle: the warp's last lanes are gone
  const float total = warp_sum(in[i]);
  if (threadIdx.x % 32 == 0) out[i / 32] = total;
}

__global__ void shuffle_with_partial_mask_kernel(float* out) {
  const float v = threadIdx.x;
  out[threadIdx.x] = __shfl_xor_sync(0x0000ffffu, v, 1);
}

__global__ void read_one_past_end_kernel(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i + 1];  // WRONG: the last thread reads in[n]
}

__global__ void write_without_bounds_check_kernel(const float* in, float* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = in[i];  // WRONG: no `if (i < n)`, so the last block's spare threads go past the end
}

__global__ void static_shared_overflow_kernel(const float* in, float* out) {
  __shared__ float s[64];
  s[threadIdx.x] = in[threadIdx.x];  // WRONG for blocks of more than 64 threads
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];
}

__global__ void load_float4_kernel(const float* in, float* out) {
  const float4 q = *reinterpret_cast<const float4*>(in);  // WRONG unless in is 16-byte aligned
  out[0] = q.x + q.y + q.z + q.w;
}

}  // namespace

// ---- 6. template kernels and kernels in namespaces ----------------------------------------------
namespace detail {

template <typename T, int kFactor>
__global__ void scale_kernel(const T* x, T* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * T(kFactor);
}

template <typename T>
__global__ void axpy_kernel(T a, const T* x, T* y, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    y[i] += a * x[i];
}

template <typename T>
__global__ void rotate_left_kernel(const T* in, T* out) {
  extern __shared__ T buf[];
  const int t = threadIdx.x, n = blockDim.x;
  const int i = blockIdx.x * n + t;
  buf[t] = in[i];
  __syncthreads();
  out[i] = buf[(t + 1) % n];
}

}  // namespace detail

// ---- host wrappers ------------------------------------------------------------------------------
void write_indices(dim3 grid, dim3 block, unsigned* out) {
  write_indices_kernel<<<grid, block>>>(out);
}

void neighbour_sum(const float* in, float* out, int blocks, int threads, bool with_barrier) {
  if (with_barrier)
    neighbour_sum_kernel<true><<<blocks, threads>>>(in, out);
  else
    neighbour_sum_kernel<false><<<blocks, threads>>>(in, out);
}

void neighbour_without_barrier(const float* in, float* out, int blocks, int threads, int offset) {
  if (offset < 0)
    neighbour_without_barrier_kernel<-1><<<blocks, threads>>>(in, out);
  else
    neighbour_without_barrier_kernel<1><<<blocks, threads>>>(in, out);
}

void tree_sum(const float* in, float* out, int blocks, int threads) {
  tree_sum_kernel<<<blocks, threads>>>(in, out);
}

void max_then_sum(const float* in, float* max_seen, float* sums, int blocks, bool with_barrier) {
  if (with_barrier)
    max_then_sum_kernel<true><<<blocks, 64>>>(in, max_seen, sums);
  else
    max_then_sum_kernel<false><<<blocks, 64>>>(in, max_seen, sums);
}

void shuffle(Shuffle kind, const float* in, float* out, int arg, int width, int blocks,
             int threads) {
  shuffle_kernel<float><<<blocks, threads>>>(in, out, kind, arg, width);
}

void shuffle(Shuffle kind, const double* in, double* out, int arg, int width, int blocks,
             int threads) {
  shuffle_kernel<double><<<blocks, threads>>>(in, out, kind, arg, width);
}

void xor_reduce(const int* in, int* out, int first_mask, int blocks, int threads) {
  xor_reduce_kernel<<<blocks, threads>>>(in, out, first_mask);
}

void down_reduce(const int* in, int* out, int blocks, int threads) {
  down_reduce_kernel<<<blocks, threads>>>(in, out);
}

void mirror_plus_neighbour(const float* in, float* out, int blocks, int threads) {
  mirror_plus_neighbour_kernel<<<blocks, threads, 2 * threads * sizeof(float)>>>(in, out);
}

void triple_float4(const float4* in, float4* out, int blocks, int threads) {
  triple_float4_kernel<<<blocks, threads, threads * sizeof(float4), nullptr>>>(in, out);
}

void mirror_plus_neighbour_smem(const float* in, float* out, int blocks, int threads,
                                int smem_floats) {
  mirror_plus_neighbour_kernel<<<blocks, threads, smem_floats * sizeof(float)>>>(in, out);
}

void count_threads(dim3 grid, dim3 block, int* count) {
  count_threads_kernel<<<grid, block>>>(count);
}

void rotate_left(const double* in, double* out, int blocks, int threads) {
  detail::rotate_left_kernel<double><<<blocks, threads, threads * sizeof(double)>>>(in, out);
}

void rotate_left(const int* in, int* out, int blocks, int threads) {
  detail::rotate_left_kernel<int><<<blocks, threads, threads * sizeof(int)>>>(in, out);
}

void atomics(AtomicCounters* counters, int* tickets, int* histogram, int bins, int blocks,
             int threads) {
  atomics_kernel<<<blocks, threads>>>(counters, tickets, histogram, bins);
}

void barrier_after_early_exit(int blocks, int threads) {
  barrier_after_early_exit_kernel<<<blocks, threads>>>();
}

void barrier_and_shuffle_diverge() {
  static float out[32];
  barrier_and_shuffle_diverge_kernel<<<1, 32>>>(out);
}

void shuffle_after_lanes_exit(const float* in, float* out, int n) {
  shuffle_after_lanes_exit_kernel<<<(n + 63) / 64, 64>>>(in, out, n);
}

void shuffle_with_partial_mask(float* out) {
  shuffle_with_partial_mask_kernel<<<1, 32>>>(out);
}

void read_one_past_end(const float* in, float* out, int n) {
  read_one_past_end_kernel<<<(n + 63) / 64, 64>>>(in, out, n);
}

void write_without_bounds_check(const float* in, float* out, int n) {
  write_without_bounds_check_kernel<<<(n + 63) / 64, 64>>>(in, out);
}

void static_shared_overflow(const float* in, float* out, int threads) {
  static_shared_overflow_kernel<<<1, threads>>>(in, out);
}

void load_float4(const float* in, float* out, int offset_floats) {
  load_float4_kernel<<<1, 1>>>(in + offset_floats, out);
}

}  // namespace emutest

// Launched from outside the namespace, qualified, with '<' and '>' inside the configuration.
void emutest::scale_by_3(const float* x, float* y, int n, cudaStream_t stream) {
  emutest::detail::scale_kernel<float, 3>
      <<<static_cast<int>((n + 127) / 128), 128, 0, stream>>>(x, y, n);
}

// A launch spread over several lines, a grid from std::min<unsigned>, and a float argument
// converted to the kernel's double parameter as a CUDA launch converts it.
void emutest::axpy(double a, const double* x, double* y, int64_t n, cudaStream_t stream) {
  const float a_single = static_cast<float>(a);
  emutest::detail::axpy_kernel<double>
      <<<dim3(std::min<unsigned>(3, static_cast<unsigned>(n / 64 + 1))), dim3(64), 0, stream>>>(
          a_single, x, y, n);
}
