// CUDA kernel of ops::permute: one thread per output element (see permute.h).
#include "gtl/ops/detail/permute_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

template <typename T>
__global__ void permute_kernel(const T* x, T* y, detail::PermuteDims d, int64_t n) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= n) return;
  int64_t rest = o, in = 0;
  for (int i = d.rank - 1; i >= 0; --i) {  // the output coordinates, last dimension first
    in += (rest % d.out_size[i]) * d.in_stride[i];
    rest /= d.out_size[i];
  }
  y[o] = x[in];
}

}  // namespace

void permute(const Tensor& x, const Tensor& y, const detail::PermuteDims& d) {
  DeviceGuard guard(x.device());
  cudaStream_t stream = current_stream().handle();
  const int64_t n = y.numel();
  GTL_DISPATCH_ALL(x.dtype(), T, {
    permute_kernel<T><<<launch::blocks_to_cover(n), launch::kThreadsPerBlock, 0, stream>>>(
        x.data<T>(), y.data<T>(), d, n);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
