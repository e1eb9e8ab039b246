// Helpers shared by the GPT tests: token ids as the integer tensor the GPT takes.
#pragma once

#include <algorithm>
#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::testing {

// An int64 tensor of `shape` holding `ids` in row-major order.
inline Tensor ids_tensor(const std::vector<int64_t>& ids, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::Int64);
  std::copy(ids.begin(), ids.end(), t.data<int64_t>());
  return t;
}

}  // namespace gtl::testing
