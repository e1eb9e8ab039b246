// The widening / rounding copy of master weights: one grid-stride kernel, dst[i] = convert(src[i]).
// half -> float32 is exact; float32 -> half rounds to nearest even, as __float2half_rn does.
#include "gtl/optim/detail/master_weights_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::optim::detail {

namespace {

using launch::grid_stride_blocks;
using launch::kThreadsPerBlock;

template <typename S, typename D>
__global__ void convert_kernel(const S* src, D* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{blockDim.x} * gridDim.x)
    dst[i] = convert<D>(src[i]);
}

}  // namespace

void convert_into_cuda(const Tensor& src, const Tensor& dst) {
  const int64_t n = src.numel();
  if (n == 0) return;
  DeviceGuard guard(src.device());
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_FLOATING(src.dtype(), S, {
    GTL_DISPATCH_FLOATING(dst.dtype(), D, {
      convert_kernel<S, D>
          <<<grid_stride_blocks(n), kThreadsPerBlock, 0, stream>>>(src.data<S>(), dst.data<D>(), n);
    });
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::optim::detail
