// The index arithmetic of ops::permute, shared by its CPU loop (permute.cpp) and its CUDA kernel
// (permute.cu). Internal to ops.
#pragma once

#include <cstdint>

namespace gtl::ops::detail {

constexpr int kMaxPermuteDims = 6;

// For output element o with coordinates c_i (row-major in y), the input offset is
// sum_i c_i * in_stride[i], where in_stride[i] is x's stride of dimension dims[i].
struct PermuteDims {
  int rank = 0;
  int64_t out_size[kMaxPermuteDims] = {};
  int64_t in_stride[kMaxPermuteDims] = {};
};

}  // namespace gtl::ops::detail
