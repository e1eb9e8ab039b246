// Does a list of tensors hold an inf or a NaN anywhere?
//
// Mixed-precision training asks this every step: a loss scale that is too large makes fp16
// gradients overflow to inf, and the step must then be skipped (optim/loss_scaler.h). Asking per
// tensor with a host-side answer would synchronise the GPU once per tensor; instead every tensor's
// check writes into one device flag, and the host reads that flag once.
#pragma once

#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

// True when any element of any tensor is +-inf or NaN (float32, float16 or bfloat16 tensors on
// one device). Synchronises once when the tensors are on the GPU.
bool has_non_finite(const std::vector<Tensor>& tensors);

// The device-side variant: sets flag[0] = 1 when any element is non-finite and leaves it
// untouched otherwise (so several calls accumulate into one flag; zero it to start). `flag` is a
// float32 tensor of shape [1] on the tensors' device. Asynchronous on the GPU: read the flag
// (flag.item()) once, when the answer is needed.
void non_finite_flag_(const std::vector<Tensor>& tensors, const Tensor& flag);

}  // namespace gtl::ops
