// Float32 master weights for a model that computes in float16 or bfloat16.
//
// Why: an update is usually ~1e-3 to 1e-5 of the weight it changes, and a half-precision number
// cannot hold such a small change. fp16 has 10 mantissa bits, so the spacing of numbers near 1 is
// 2^-10 ~ 1e-3: 1 + 1e-4 rounds back to 1 in fp16 (bf16, with 7 bits, already loses 1 + 1e-3).
// Stepping the half weights directly would silently drop every small update, forever. So the
// optimizer steps a float32 copy (the master), where the small updates accumulate, and the model
// gets the master rounded to half after every step: once the accumulated change is large enough
// to show in half precision, it shows.
//
// The flow per step (mixed precision, as apex's O2 / llm.c):
// clang-format off
//   backward              -> half gradients in the model's grad tensors
//   grads_to_master()     -> float32 master gradients (a widening copy, exact)
//   [LossScaler::unscale_ / clip_grad_norm_ on params(), in float32: no underflow]
//   optimizer.step()      -> updates the float32 master and writes round(master) into the model's
//                            half value in the same fused pass (ParamRef::compute)
// clang-format on
//
// Parameters the model keeps in float32 (often norms and biases) are passed through: the model's
// own tensors are the master.
#pragma once

#include <vector>

#include "gtl/optim/optimizer.h"

namespace gtl::optim {

class MasterWeights {
 public:
  // `model_params`: the (value, grad) pairs the model computes with, fp16/bf16 or float32.
  explicit MasterWeights(std::vector<ParamRef> model_params);

  // What to give the optimizer, the loss scaler and gradient clipping: value = float32 master
  // (initialised from the model's values), grad = float32 master gradient, compute = the model's
  // half value. Same order and names as the model's list.
  const std::vector<ParamRef>& params() const { return master_; }
  const std::vector<ParamRef>& model_params() const { return model_; }

  // master grad = float32(model grad) for every half parameter. Asynchronous on the GPU.
  void grads_to_master() const;
  // model value = round(master value): after loading masters from a checkpoint.
  void refresh_model() const;

  // "<name>.master" for every half parameter: the float32 weights a checkpoint must keep (the
  // half model weights alone lose the accumulated small updates).
  NamedTensors state() const;
  // Copies the masters from `saved` and refreshes the model's half values from them.
  void load_state(const NamedTensors& saved) const;

 private:
  std::vector<ParamRef> model_, master_;
};

namespace detail {
// dst = convert(src) element by element, any floating dtypes, same shape and device. Does not
// allocate and, on the GPU, does not synchronise (unlike Tensor::to + copy_).
void convert_into(const Tensor& src, const Tensor& dst);
}  // namespace detail

}  // namespace gtl::optim
