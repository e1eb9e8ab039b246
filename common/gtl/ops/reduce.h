// Reductions: sum, mean and max of a whole tensor, and the sum over rows (a bias gradient).
//
// Results are float32 whatever the input dtype: a sum of many float16 values overflows (65504)
// or loses every small addend long before it is done, so reductions accumulate in float32 (on
// the CPU in double: free there, and it makes the CPU the accurate reference for the GPU).
//
// The GPU sums are deterministic: each block reduces a fixed slice into one partial, then one
// block reduces the partials in a fixed order. No atomicAdd, whose order (and so whose rounding)
// changes from run to run.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

// Whole tensor -> a 1-element float32 tensor [1] on the same device.
Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);  // NaN for an empty tensor, as 0/0
Tensor max(const Tensor& x);   // throws for an empty tensor; NaN if x holds a NaN

// x [..., C] seen as rows x C -> float32 [C]: out[c] = sum over rows of x[r, c]. The gradient of
// a bias broadcast over rows (bias_add).
Tensor sum_rows(const Tensor& x);

}  // namespace gtl::ops
