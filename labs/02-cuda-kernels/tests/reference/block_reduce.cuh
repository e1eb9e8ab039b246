// The reference block reduction for the tests and benchmarks of TODOs 1c, 4, 5 and 5b: the core's
// (common/gtl/ops/detail/warp_reduce.cuh) under the names TODO 1b gives them. Those checks
// compile your reduce.cu, softmax.cu and layernorm.cu beside this file instead of your
// block_reduce.cuh, so that each grades its own TODO alone; TODO 1b's own tests use yours.
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
