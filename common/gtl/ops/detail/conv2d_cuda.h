// The cuDNN path of the conv2d ops (conv2d.cu). Internal to the core: use conv2d.h.
// Shapes, dtypes and devices are checked by the callers in conv2d.cpp; outputs are allocated.
#pragma once

#include "gtl/ops/conv2d.h"

namespace gtl::ops::cuda {

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    const Conv2dParams& p);
void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                          const Conv2dParams& p);
void conv2d_backward_weight(const Tensor& dy, const Tensor& x, const Tensor& dw,
                            const Conv2dParams& p);
void conv2d_backward_bias(const Tensor& dy, const Tensor& db);

}  // namespace gtl::ops::cuda
