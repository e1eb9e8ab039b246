// Permute: a contiguous copy of a tensor with its dimensions reordered.
//
//   Tensor y = ops::permute(x, {0, 2, 1, 3});   // [B, T, H, d] -> [B, H, T, d]
//
// gtl::Tensor has one layout, contiguous row-major, so a transpose is a copy (PyTorch makes a
// strided view and copies later, in .contiguous()). Attention needs it twice per direction:
// splitting the fused QKV projection into per-head matrices and merging the heads again
// (nn/causal_self_attention.h). y.shape[i] = x.shape[dims[i]]; the gradient of a permute is the
// permute by the inverse order (inverse_permutation).
//
// Backends: CPU a loop over output elements; CUDA one thread per output element, each computing
// its input offset from the output index (reads are strided, writes coalesced). Any dtype;
// up to 6 dimensions.
#pragma once

#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
// p^-1 with p^-1[p[i]] = i: permute(permute(x, p), inverse_permutation(p)) == x.
std::vector<int64_t> inverse_permutation(const std::vector<int64_t>& dims);

}  // namespace gtl::ops
