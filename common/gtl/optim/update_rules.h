// The per-element update rules of the optimizers, written once for the CPU loops (sgd.cpp,
// adamw.cpp) and the fused CUDA kernels (sgd.cu, adamw.cu): both backends evaluate the same
// float32 formulas, so the GPU tests can compare against the CPU path with tight tolerances.
// They agree to rounding, not bit for bit: nvcc fuses a * b + c into one FMA (one rounding),
// g++ rounds the product and the sum separately.
//
// Everything is float32: parameters stored in fp16/bf16 are widened before the update and
// rounded once after it, and the optimizer state is always float32.
#pragma once

#include <math.h>

#include "gtl/tensor/dispatch.h"
#include "gtl/tensor/half.h"

namespace gtl::optim::rules {

// SGD with momentum, PyTorch semantics (dampening 0):
//   g += wd * p                  (L2 weight decay, coupled: it goes through the momentum)
//   buf = momentum * buf + g     (buf starts at 0, so the first step gives buf = g)
//   g = nesterov ? g + momentum * buf : buf
//   p -= lr * g
struct SgdScalars {
  float lr, momentum, weight_decay;
  bool nesterov, use_momentum;
};

GTL_HOST_DEVICE inline float sgd(float p, float g, float* buf, const SgdScalars& s) {
  g += s.weight_decay * p;
  if (s.use_momentum) {
    *buf = s.momentum * *buf + g;
    g = s.nesterov ? g + s.momentum * *buf : *buf;
  }
  return p - s.lr * g;
}

// AdamW, PyTorch semantics (decoupled weight decay, eps outside the sqrt), at step t >= 1:
//   p *= 1 - lr * wd             (decay the weight itself, not through the gradient)
//   m = b1 * m + (1 - b1) * g
//   v = b2 * v + (1 - b2) * g^2
//   p -= (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
struct AdamWScalars {
  float beta1, beta2, eps;
  float decay;                  // 1 - lr * weight_decay
  float step_size;              // lr / (1 - beta1^t)
  float bias_correction2_sqrt;  // sqrt(1 - beta2^t)
};

GTL_HOST_DEVICE inline float adamw(float p, float g, float* m, float* v, const AdamWScalars& s) {
  p *= s.decay;
  *m = s.beta1 * *m + (1.f - s.beta1) * g;
  *v = s.beta2 * *v + (1.f - s.beta2) * g * g;
  const float denom = sqrtf(*v) / s.bias_correction2_sqrt + s.eps;
  return p - s.step_size * (*m / denom);
}

}  // namespace gtl::optim::rules

// Runs the body with P = the C++ type of param.value and C = the type of param.compute (C = P
// when the parameter has no compute copy; its pointer is then nullptr).
#define GTL_DISPATCH_PARAM(param, P, C, ...)                          \
  GTL_DISPATCH_FLOATING((param).value.dtype(), P, {                   \
    if ((param).compute.defined()) {                                  \
      GTL_DISPATCH_FLOATING((param).compute.dtype(), C, __VA_ARGS__); \
    } else {                                                          \
      using C = P;                                                    \
      __VA_ARGS__;                                                    \
    }                                                                 \
  })
