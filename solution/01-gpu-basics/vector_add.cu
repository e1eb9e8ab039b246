// Lab 01, TODO 3: device memory and a vector-add kernel.
//
// A kernel runs as a grid of blocks of threads. With a grid-stride loop a fixed-size grid covers
// any n: thread t handles elements t, t + stride, t + 2 stride, ... where stride is the number of
// threads in the grid. Consecutive threads touch consecutive elements, so each warp's loads are
// coalesced into a few wide memory transactions. __restrict__ promises that a, b and c do not
// overlap, so the compiler may load the inputs through the read-only cache.
#include "check_cuda.h"
#include "gpu_basics.h"

namespace lab01 {

namespace {

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int64_t n) {
  // SOLUTION(lab01) step 3a
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += stride) {
    c[i] = a[i] + b[i];
  }
  // END SOLUTION(lab01)
}

}  // namespace

void vector_add_device(const float* a, const float* b, float* c, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  // Enough blocks to fill every SM several times over; the loop covers the rest.
  int device = 0, sms = 0;
  LAB_CHECK(cudaGetDevice(&device));
  LAB_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int threads = 256;
  const int64_t needed = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(needed < int64_t{sms} * 8 ? needed : int64_t{sms} * 8);
  vector_add_kernel<<<blocks, threads, 0, stream>>>(a, b, c, n);
  LAB_CHECK(cudaGetLastError());
}

void vector_add_gpu(const float* a, const float* b, float* c, int64_t n) {
  // SOLUTION(lab01) step 3b
  if (n == 0) return;
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *d_a = nullptr, *d_b = nullptr, *d_c = nullptr;
  LAB_CHECK(cudaMalloc(&d_a, bytes));
  LAB_CHECK(cudaMalloc(&d_b, bytes));
  LAB_CHECK(cudaMalloc(&d_c, bytes));
  LAB_CHECK(cudaMemcpy(d_a, a, bytes, cudaMemcpyHostToDevice));
  LAB_CHECK(cudaMemcpy(d_b, b, bytes, cudaMemcpyHostToDevice));
  vector_add_device(d_a, d_b, d_c, n, nullptr);
  LAB_CHECK(cudaMemcpy(c, d_c, bytes, cudaMemcpyDeviceToHost));  // waits for the kernel
  LAB_CHECK(cudaFree(d_a));
  LAB_CHECK(cudaFree(d_b));
  LAB_CHECK(cudaFree(d_c));
  // END SOLUTION(lab01)
}

}  // namespace lab01
