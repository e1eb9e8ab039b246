// The reference block reduction for the tests of TODO 1c: the core's
// (common/gtl/ops/detail/warp_reduce.cuh) under the names TODO 1b gives them. The 1c tests
// compile your reduce.cu beside this file instead of your block_reduce.cuh, so that they grade
// step 1c alone; TODO 1b's own tests use yours.
#pragma once

#include <cuda_runtime.h>

#include "gtl/ops/detail/warp_reduce.cuh"

namespace lab02 {

__device__ inline float warp_reduce_sum(float v) {
  return gtl::ops::cuda_detail::warp_sum(v);
}
__device__ inline float warp_reduce_max(float v) {
  return gtl::ops::cuda_detail::warp_max(v);
}

template <bool kMax>
__device__ inline float block_reduce(float v, float* scratch) {
  return gtl::ops::cuda_detail::block_reduce<kMax>(v, scratch);
}

}  // namespace lab02
