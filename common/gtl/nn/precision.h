// PrecisionPolicy: which ops compute in half precision, in the spirit of torch.autocast.
//
//   nn::PrecisionScope scope(nn::PrecisionPolicy::parse("bf16"));   // for this step
//   Tensor logits = model.forward(x, ctx);
//
// Matmuls and convolutions are where half precision pays (tensor cores: 667 vs 50 TFLOP/s on an
// H100) and where it is safe: each product is rounded, the sum accumulates in float32. So Linear
// and Conv2d cast their input and weights to `compute` and produce `compute` outputs. What stays
// in float32, whatever the policy, is what rounding would break:
//   - softmax / cross-entropy (exp and log of sums: the loss is computed from float32 logits),
//   - LayerNorm (its mean and variance; the layer casts its input to float32),
//   - reductions (ops/reduce.h always returns float32), the residual stream (residual_mlp.h adds
//     in float32), and the float32 master weights and gradients.
// fp16 has a narrow range (6e-5 .. 65504): small gradients underflow to zero, so fp16 training
// scales the loss (optim/loss_scaler.h); bf16 has float32's range and needs no scaling.
// tf32 keeps float32 tensors and lets the GPU's tensor cores round the GEMM inputs to 10 mantissa
// bits (ops/math_mode.h); the CPU ignores it.
//
// The policy is a per-thread setting (like current_stream()), so it can change from one step to
// the next without touching the model; PrecisionScope restores the previous one on exit.
#pragma once

#include <string>
#include <vector>

#include "gtl/ops/math_mode.h"
#include "gtl/optim/param.h"
#include "gtl/tensor/tensor.h"

namespace gtl::nn {

using optim::ParamRef;

struct PrecisionPolicy {
  DType compute = DType::Float32;  // dtype of matmul / convolution inputs and outputs
  bool tf32 = false;               // float32 GEMMs on TF32 tensor cores (GPU only)

  static PrecisionPolicy fp32() { return {}; }
  static PrecisionPolicy tf32_policy() { return {DType::Float32, true}; }
  static PrecisionPolicy bf16() { return {DType::BFloat16, false}; }
  static PrecisionPolicy fp16() { return {DType::Float16, false}; }
  // "fp32", "tf32", "bf16" or "fp16"; throws naming the accepted values otherwise.
  static PrecisionPolicy parse(const std::string& name);
  std::string name() const;
  // fp16 gradients underflow without loss scaling; the others do not need it.
  bool needs_loss_scaling() const { return compute == DType::Float16; }
};

// The policy of this thread (fp32 unless a PrecisionScope is active).
const PrecisionPolicy& current_precision();

// x in the compute dtype of the current policy (x itself when it already is).
Tensor cast_to_compute(const Tensor& x);
// x in `dtype` (x itself when it already is).
Tensor cast_to(const Tensor& x, DType dtype);
// A parameter's value in `dtype`: its half compute copy when it has one of that dtype (kept up
// to date by the optimizer, parameter_buffer.h), else a cast made now (autocast's way).
Tensor weight_as(const ParamRef& p, DType dtype);
// Gives each parameter a compute copy of its own, round(value) in `dtype` (fp16 or bf16), which
// weight_as returns and the optimizer rewrites after each update: per-parameter tensors, where
// ParameterBuffer::enable_compute_copy makes one flat buffer for a whole model.
void add_compute_copies(const std::vector<ParamRef*>& params, DType dtype);

class PrecisionScope {
 public:
  explicit PrecisionScope(const PrecisionPolicy& policy);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  PrecisionPolicy previous_;
  ops::ScopedTF32 tf32_;
};

}  // namespace gtl::nn
