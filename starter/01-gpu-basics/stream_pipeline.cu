// Lab 01, TODO 6: overlapping copies and compute with streams.
//
// Work in one stream runs in order; work in different streams may run at the same time. A GPU has
// separate engines for host-to-device copies, device-to-host copies and kernels, so splitting a
// job into chunks, each in its own stream, lets chunk k+1 travel to the GPU while chunk k is being
// computed and chunk k-1 travels back. Copies overlap only from pinned host memory.
#include <algorithm>
#include <vector>

#include "check_cuda.h"
#include "gpu_basics.h"

namespace lab01 {

namespace {

__global__ void scale_kernel(const float* in, float* out, int64_t n, float alpha) {
  const int64_t stride = int64_t{blockDim.x} * gridDim.x;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += stride)
    out[i] = alpha * in[i];
}

void launch_scale(const float* in, float* out, int64_t n, float alpha, cudaStream_t stream) {
  if (n == 0) return;
  const int64_t blocks = std::min<int64_t>((n + 255) / 256, 1024);
  scale_kernel<<<static_cast<int>(blocks), 256, 0, stream>>>(in, out, n, alpha);
  LAB_CHECK(cudaGetLastError());
}

}  // namespace

void scale_serial(const float* in, float* out, float* d_in, float* d_out, int64_t n, float alpha) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  LAB_CHECK(cudaMemcpy(d_in, in, bytes, cudaMemcpyHostToDevice));
  launch_scale(d_in, d_out, n, alpha, nullptr);
  LAB_CHECK(cudaMemcpy(out, d_out, bytes, cudaMemcpyDeviceToHost));
}

void scale_pipelined(const float* in, float* out, float* d_in, float* d_out, int64_t n, float alpha,
                     int chunks) {
  // TODO(lab01) step 6: split [0, n) into `chunks` pieces: use at most n chunks, chunk =
  // ceil(n / chunks), and chunk k covers [k * chunk, min((k + 1) * chunk, n)); with n = 13 and 12
  // chunks only 7 hold data, so skip a chunk that starts at or past n (a negative size would be
  // an error). Give each piece its own stream (cudaStreamCreateWithFlags with
  // cudaStreamNonBlocking) and queue, in that stream: cudaMemcpyAsync of its part of `in` to d_in,
  // launch_scale on its part, cudaMemcpyAsync of its part of d_out back to `out`. Then
  // synchronise and destroy every stream. Compare with scale_serial above. About 17 lines.
  (void)in, (void)out, (void)d_in, (void)d_out, (void)n, (void)alpha, (void)chunks;
  // END TODO(lab01)
}

}  // namespace lab01
