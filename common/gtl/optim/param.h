// What an optimizer updates: a parameter tensor and its gradient, by reference.
//
// A ParamRef holds Tensor handles, which share their data: the model keeps writing gradients
// into `grad` and reading `value`, and the optimizer, built once from the list, sees every
// change. The nn layers hand out exactly such lists (their flat-buffer views of parameters and
// gradients are theirs).
//
// `compute` is for mixed precision with float32 master weights (master_weights.h): `value` is
// then the float32 master the optimizer steps, and `compute` the float16/bfloat16 copy the model
// computes with, which the optimizer rewrites (rounded) in the same pass as the update.
#pragma once

#include <string>
#include <vector>

#include "gtl/tensor/tensor.h"

namespace gtl::optim {

struct ParamRef {
  Tensor value;         // what the optimizer updates (float32, or fp16/bf16 for pure-half training)
  Tensor grad;          // d loss / d value: same shape, dtype and device as value
  Tensor compute = {};  // optional half-precision copy rewritten as round(value) after each step
  std::string name = {};  // names the optimizer state in checkpoints; "param<i>" when empty
};

// The checkpoint name of params[i]: its name, or "param<i>" when it has none.
std::string param_name(const std::vector<ParamRef>& params, std::size_t i);

// Checks what every optimizer relies on (shapes, dtypes, devices, unique names) and throws a
// message naming the offending parameter; `who` prefixes it ("AdamW").
void check_params(const char* who, const std::vector<ParamRef>& params);

// Sets every gradient to zero (before the backward pass of the next step).
void zero_grad(const std::vector<ParamRef>& params);

// The gradient tensors of `params`, e.g. for ops::global_l2_norm.
std::vector<Tensor> grads_of(const std::vector<ParamRef>& params);

}  // namespace gtl::optim
