// The optimizer interface every update rule shares (sgd.h, adamw.h).
//
// An optimizer is built once from the parameter list and then called once per training step.
// Its state (momentum buffers, Adam's moments, the step count) is what a checkpoint must save
// besides the parameters, or a resumed run does not continue the same trajectory: state() names
// every state tensor "<param name>.<buffer>", and load_state() copies such a list back.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gtl/optim/param.h"

namespace gtl::optim {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Optimizer {
 public:
  explicit Optimizer(std::vector<ParamRef> params) : params_(std::move(params)) {}
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter from its current gradient.
  virtual void step() = 0;

  virtual float lr() const = 0;
  virtual void set_lr(float lr) = 0;  // learning-rate schedules call this before step()

  // The live state tensors by name (shared, not copies: copy them to save a checkpoint).
  virtual NamedTensors state() const = 0;
  // Copies every tensor of state() from `saved` (matched by name, shape and dtype checked);
  // throws naming the first missing or mismatched entry.
  void load_state(const NamedTensors& saved);

  int64_t step_count() const { return step_count_; }
  void set_step_count(int64_t steps) { step_count_ = steps; }

  const std::vector<ParamRef>& params() const { return params_; }
  void zero_grad() const { optim::zero_grad(params_); }

 protected:
  std::vector<ParamRef> params_;
  int64_t step_count_ = 0;
};

}  // namespace gtl::optim
