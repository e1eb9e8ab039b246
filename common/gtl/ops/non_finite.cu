// GPU path of the non-finite check: one grid-stride kernel per tensor, all writing the same flag.
// Many threads may store 1 into the flag at once; they all store the same value, so no atomic is
// needed, and a clean tensor never writes at all (the flag keeps what earlier calls left there).
#include <cmath>

#include "gtl/ops/detail/non_finite_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::detail {

namespace {

using launch::kThreadsPerBlock;
constexpr int64_t kMaxBlocks = 4096;  // one flag written by every block: few blocks suffice

template <typename T>
__global__ void non_finite_kernel(const T* x, int64_t n, float* flag) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x) {
    if (!isfinite(convert<float>(x[i]))) *flag = 1.f;
  }
}

}  // namespace

void non_finite_flag_cuda(const std::vector<Tensor>& tensors, const Tensor& flag) {
  DeviceGuard guard(flag.device());
  cudaStream_t stream = current_stream().handle();
  for (const Tensor& t : tensors) {
    if (t.numel() == 0) continue;
    GTL_DISPATCH_FLOATING(t.dtype(), T, {
      non_finite_kernel<T>
          <<<launch::grid_stride_blocks(t.numel(), kThreadsPerBlock, kMaxBlocks), kThreadsPerBlock,
             0, stream>>>(t.data<T>(), t.numel(), flag.data<float>());
    });
    GTL_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace gtl::ops::detail
