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
  // SOLUTION(lab01) step 6
  chunks = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(chunks, n)));
  std::vector<cudaStream_t> streams(chunks);
  for (auto& s : streams) LAB_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const int64_t chunk = (n + chunks - 1) / chunks;
  for (int c = 0; c < chunks; ++c) {
    const int64_t begin = c * chunk, count = std::min(chunk, n - begin);
    if (count <= 0) break;
    const size_t bytes = static_cast<size_t>(count) * sizeof(float);
    LAB_CHECK(cudaMemcpyAsync(d_in + begin, in + begin, bytes, cudaMemcpyHostToDevice, streams[c]));
    launch_scale(d_in + begin, d_out + begin, count, alpha, streams[c]);
    LAB_CHECK(
        cudaMemcpyAsync(out + begin, d_out + begin, bytes, cudaMemcpyDeviceToHost, streams[c]));
  }
  for (auto& s : streams) {
    LAB_CHECK(cudaStreamSynchronize(s));
    LAB_CHECK(cudaStreamDestroy(s));
  }
  // END SOLUTION(lab01)
}

}  // namespace lab01
