// Softmax and log-softmax over the last dimension, forward and backward.
//
//   softmax(x)_i     = exp(x_i - m) / sum_j exp(x_j - m)        m = max_j x_j
//   log_softmax(x)_i = (x_i - m) - log(sum_j exp(x_j - m))
//
// Subtracting the row max changes nothing mathematically (it cancels between numerator and
// denominator) but everything numerically: exp(89) already overflows float32 to inf, and
// inf / inf is NaN, whereas exp(x_i - m) <= 1 always and the largest term is exactly 1, so the
// sum is in [1, C] and neither overflows nor underflows to 0. Logits of 1e4 stay finite.
// log_softmax is computed directly (not as log(softmax)): log(0) would give -inf for every
// probability that underflowed.
//
// The backward ops take the saved forward *output* y (all that the gradient needs):
//   softmax:      dx = y * (dy - sum_j dy_j y_j)
//   log_softmax:  dx = dy - exp(y) * sum_j dy_j
// float16/bfloat16 are computed in float32 (max, sums, exp) and rounded once; outputs have the
// input's dtype. A row that is entirely -inf has no softmax and gives NaN, as in PyTorch.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

// x [..., C] -> same shape and dtype.
Tensor softmax(const Tensor& x);
Tensor log_softmax(const Tensor& x);

// y = softmax(x) (or log_softmax(x)), dy = dLoss/dy: same shape, dtype, device -> dx.
Tensor softmax_backward(const Tensor& y, const Tensor& dy);
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy);

}  // namespace gtl::ops
