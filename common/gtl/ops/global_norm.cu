// GPU path of the global L2 norm: a multi-tensor, two-level reduction with no host round trip.
//
//   step 1  for each tensor, a grid of blocks: each thread squares and sums its grid-stride share
//           in double, the block reduces its threads (warp shuffles, then shared memory) and
//           writes one partial sum into the tensor's slice of a shared `partials` buffer;
//   step 2  one block adds all partials in double, in a fixed order, and writes sqrt(sum).
// Squares in double, as on the CPU: in float32 a gradient above 1.8e19 squares to inf, and the
// norm of finite gradients would come out infinite on the GPU only.
//
// Only the number of blocks per tensor is chosen on the host (capped at kMaxBlocks), so the result
// is the same on every run: no atomics, no order that depends on scheduling.
#include <cmath>

#include "gtl/ops/detail/global_norm_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::detail {

namespace {

constexpr int kThreads = launch::kThreadsPerBlock;
constexpr int64_t kMaxBlocks = 1024;

// The partials a tensor adds: one per block of its grid-stride loop, none for an empty tensor.
int64_t partials_for(int64_t n) {
  return n == 0 ? 0 : launch::grid_stride_blocks(n, kThreads, kMaxBlocks);
}

// Sum of `value` over the block; the result is valid in thread 0.
template <typename A>
__device__ A block_sum(A value) {
  __shared__ A warp_sums[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_down_sync(0xffffffffu, value, offset);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  value = threadIdx.x < kThreads / 32 ? warp_sums[threadIdx.x] : A(0);
  if (warp == 0) {
    for (int offset = 16; offset > 0; offset /= 2)
      value += __shfl_down_sync(0xffffffffu, value, offset);
  }
  return value;
}

// Step 1: one partial sum of squares per block.
template <typename T>
__global__ void sum_squares_partial(const T* x, int64_t n, double* partials) {
  double acc = 0.0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    const double v = convert<float>(x[i]);
    acc += v * v;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// Step 2: one block reduces every partial in double and takes the square root.
__global__ void finish_norm(const double* partials, int64_t count, float* out) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += partials[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) out[0] = static_cast<float>(sqrt(acc));
}

}  // namespace

Tensor global_l2_norm_cuda(const std::vector<Tensor>& tensors) {
  const Device device = tensors[0].device();
  DeviceGuard guard(device);
  cudaStream_t stream = current_stream().handle();
  int64_t total_blocks = 0;
  for (const Tensor& t : tensors) total_blocks += partials_for(t.numel());
  Tensor out = Tensor::empty({1}, DType::Float32, device);
  if (total_blocks == 0) {
    out.zero_();
    return out;
  }
  // There is no float64 dtype: the partials live in a byte buffer of the same size.
  Tensor partials =
      Tensor::empty({total_blocks * static_cast<int64_t>(sizeof(double))}, DType::UInt8, device);
  double* const first = static_cast<double*>(partials.data_ptr());
  double* slot = first;
  for (const Tensor& t : tensors) {
    const int64_t blocks = partials_for(t.numel());
    if (blocks == 0) continue;
    GTL_DISPATCH_FLOATING(t.dtype(), T, {
      sum_squares_partial<T>
          <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(t.data<T>(), t.numel(), slot);
    });
    GTL_CUDA_CHECK_LAUNCH();
    slot += blocks;
  }
  finish_norm<<<1, kThreads, 0, stream>>>(first, total_blocks, out.data<float>());
  GTL_CUDA_CHECK_LAUNCH();
  return out;
}

}  // namespace gtl::ops::detail
