// Max and Min of the ring reductions, shared by the CPU loop (reduce.cpp) and the CUDA kernel
// (reduce_kernels.cu) so that both backends treat NaN alike (internal).
#pragma once

#include <type_traits>

#include "gtl/tensor/half.h"  // GTL_HOST_DEVICE

namespace gtl::dist::detail {

// A NaN in either operand wins, as in torch.maximum / torch.minimum. std::max(a, b) and
// a > b ? a : b keep or drop a NaN depending on which side it is on, so the result of a ring
// reduction would depend on the rank that held the NaN, and a diverged rank could go unseen.
template <typename T>
GTL_HOST_DEVICE inline T nan_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (a != a || a > b) ? a : b;
  } else {
    return a > b ? a : b;
  }
}

template <typename T>
GTL_HOST_DEVICE inline T nan_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (a != a || a < b) ? a : b;
  } else {
    return a < b ? a : b;
  }
}

}  // namespace gtl::dist::detail
