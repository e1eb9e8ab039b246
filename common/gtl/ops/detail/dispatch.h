// Dispatch macros an op's CPU path (name.cpp) and CUDA path (name.cu) share (internal to ops;
// the dtype dispatch every part uses is GTL_DISPATCH_FLOATING in gtl/tensor/dispatch.h).
#pragma once

#include <cstdint>

#include "gtl/tensor/dtype.h"

// Runs the body with L = int32_t or int64_t, the C++ type of the labels (cross-entropy).
#define GTL_DISPATCH_LABELS(dtype, L, ...) \
  if ((dtype) == DType::Int32) {           \
    using L = int32_t;                     \
    __VA_ARGS__;                           \
  } else {                                 \
    using L = int64_t;                     \
    __VA_ARGS__;                           \
  }
