// The CUDA kernels behind the pool2d ops (pool2d.cu). Internal to the core: use pool2d.h.
// Arguments are checked and outputs allocated by pool2d.cpp.
#pragma once

#include "gtl/ops/pool2d.h"

namespace gtl::ops::cuda {

void max_pool2d_forward(const Tensor& x, const Tensor& y, const Tensor& indices,
                        const Pool2dParams& p);
void max_pool2d_backward(const Tensor& dy, const Tensor& indices, const Tensor& dx,
                         const Pool2dParams& p);
void avg_pool2d_forward(const Tensor& x, const Tensor& y, const Pool2dParams& p);
void avg_pool2d_backward(const Tensor& dy, const Tensor& dx, const Pool2dParams& p);

}  // namespace gtl::ops::cuda
