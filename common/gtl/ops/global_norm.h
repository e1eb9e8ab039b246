// The global L2 norm of a list of tensors: sqrt(sum over every element of every tensor of x^2).
//
// Gradient clipping needs the norm of *all* gradients together, not one norm per tensor: the
// clip coefficient max_norm / norm must scale every gradient by the same factor, or the update
// changes direction. The result stays on the tensors' device (a 1-element float32 tensor), so a
// training step can clip without the host waiting for the GPU; call .item() only to log it.
//
// Accumulation: squares are summed in double on both backends, where even the square of the
// largest float32 cannot overflow. The GPU (global_norm.cu) does a two-level reduction: each
// block of each tensor writes one partial sum into a shared buffer, then one final block adds the
// partials in a fixed order (deterministic) and takes the sqrt. float16 / bfloat16 inputs are
// widened first: 300^2 already overflows fp16 (max 65504).
#pragma once

#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

// sqrt(sum_i sum_j tensors[i][j]^2) as a float32 tensor of shape [1] on the tensors' device
// (all tensors must share one device; float32, float16 or bfloat16; an empty list gives 0 on the
// CPU). Asynchronous on the GPU.
Tensor global_l2_norm(const std::vector<Tensor>& tensors);

}  // namespace gtl::ops
