// Dynamic loss scaling for float16 training, as torch.cuda.amp.GradScaler.
//
// fp16 gradients below 6e-8 underflow to zero and are lost. Multiplying the loss by a large
// scale S (65536 to start) multiplies every gradient by S too, lifting them into fp16's range;
// the gradients are divided by S again (unscale_) in float32 before the optimizer uses them.
// Too large an S overflows some gradient to inf. So the scale adapts:
//   - a step whose gradients hold an inf or NaN is skipped and S *= backoff (0.5);
//   - after growth_interval (2000) clean steps in a row, S *= growth (2).
// The inf/NaN check is fused into the unscale pass and writes one device flag: the host reads it
// once per step, in step(), instead of once per tensor.
//
// A step:   backward(loss * scale()) ... ; scaler.unscale_(params) (optional, before clipping);
//           scaler.step(optimizer); scaler.update();
#pragma once

#include <cstdint>
#include <vector>

#include "gtl/optim/optimizer.h"

namespace gtl::optim {

struct LossScalerOptions {
  float init_scale = 65536.f;
  float growth_factor = 2.f;
  float backoff_factor = 0.5f;
  int64_t growth_interval = 2000;
  bool enabled = true;  // false: scale() is 1 and step() just steps (float32 / bf16 training)
};

// What a checkpoint saves to resume the scale schedule exactly.
struct LossScalerState {
  float scale = 65536.f;
  int64_t growth_tracker = 0;  // clean steps in a row since the last change of scale
};

class LossScaler {
 public:
  explicit LossScaler(LossScalerOptions options = {});

  // Multiply the loss (or the gradient seed of the backward pass) by this.
  float scale() const { return enabled() ? state_.scale : 1.f; }
  bool enabled() const { return options_.enabled; }

  // grad *= 1 / scale() for every parameter, in float32, and records whether any gradient holds
  // an inf or NaN (device flag, no synchronisation). At most once between two update() calls.
  void unscale_(const std::vector<ParamRef>& params);
  // Unscales if unscale_ was not called, reads the flag (one synchronisation) and steps the
  // optimizer only when every gradient was finite. Returns whether it stepped.
  bool step(Optimizer& optimizer);
  // Adjusts the scale from this step's flag (backoff or growth) and starts the next step.
  void update();

  // Whether the last step() found an inf or NaN (and skipped the step).
  bool found_inf() const { return found_inf_; }

  // The flag unscale_ wrote: float32 [1] on the gradients' device, 1 when an inf or NaN was seen;
  // undefined before unscale_ or when unscale_ saw no parameters. Sharded training (ZeRO, FSDP)
  // unscales only this rank's shard, so each rank sees only its own overflows: between unscale_
  // and step(), dist::all_reduce_found_inf (dist/sharded_grads.h) replaces the flag with the max
  // over the group, and every rank skips the same steps.
  const Tensor& found_inf_flag() const { return flag_; }
  void set_found_inf_flag(const Tensor& flag);

  LossScalerState state() const { return state_; }
  void load_state(const LossScalerState& state);

 private:
  LossScalerOptions options_;
  LossScalerState state_;
  Tensor flag_;  // float32 [1] on the gradients' device: 1 when a non-finite gradient was seen
  bool unscaled_ = false, stepped_ = false, found_inf_ = false;
};

}  // namespace gtl::optim
