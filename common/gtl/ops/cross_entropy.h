// Cross-entropy loss of logits against integer class labels, its gradient, and accuracy.
//
//   loss_r = -log softmax(x_r)[label_r] = log sum_j exp(x_rj - m_r) + m_r - x_r[label_r]
//   loss   = mean over the rows r of loss_r
//   dloss/dx_rj = (softmax(x_r)_j - [j == label_r]) / rows
//
// Computed from the logits in one fused op rather than log(softmax(x)): the row max m_r is
// subtracted before exp (see softmax.h), so logits of 1e4 give a finite, exact loss, and no
// probability that underflowed to 0 ever reaches a log. The gradient has the famous simple form
// above, which is why frameworks fuse softmax with the loss.
//
// logits: [..., C] (float32, float16 or bfloat16; math in float32). labels: int32 or int64 with
// the shape of logits minus its last dimension, values in [0, C). The loss and the accuracy are
// float32 [1] tensors on the logits' device (a mean over many rows needs float32). A label out
// of range throws on the CPU; on the GPU (where checking would need a synchronisation) it makes
// that row's loss and gradient NaN, so it cannot go unnoticed.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

// Mean cross-entropy over the rows: float32 [1].
Tensor cross_entropy(const Tensor& logits, const Tensor& labels);

// dlogits = dloss * (softmax(logits) - onehot(labels)) / rows, logits' shape and dtype.
// `dloss` is the upstream gradient of the loss (1 for a plain backward, the loss scale under
// mixed-precision loss scaling).
Tensor cross_entropy_backward(const Tensor& logits, const Tensor& labels, float dloss = 1.f);

// Fraction of rows whose argmax (first index of the largest logit) equals the label: float32 [1].
Tensor accuracy(const Tensor& logits, const Tensor& labels);

}  // namespace gtl::ops
