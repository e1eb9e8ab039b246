// Dynamic loss scaling (see loss_scaler.h): the fused unscale-and-check on the CPU, and the
// scale schedule of torch's GradScaler (_amp_update_scale_).
#include "gtl/optim/loss_scaler.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include <cmath>

#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/optim/detail/loss_scaler_cuda.h"
#endif

namespace gtl::optim {

LossScaler::LossScaler(LossScalerOptions options) : options_(options) {
  GTL_CHECK(options_.init_scale > 0.f && options_.growth_factor > 1.f &&
                options_.backoff_factor > 0.f && options_.backoff_factor < 1.f &&
                options_.growth_interval > 0,
            "LossScaler: expected init_scale > 0, growth_factor > 1, 0 < backoff_factor < 1, "
            "growth_interval > 0; got "
                << options_.init_scale << ", " << options_.growth_factor << ", "
                << options_.backoff_factor << ", " << options_.growth_interval);
  state_.scale = options_.init_scale;
}

void LossScaler::unscale_(const std::vector<ParamRef>& params) {
  gtl::grading::reference_guard("gtl::optim::LossScaler::unscale_");
  if (!enabled()) return;
  GTL_CHECK(!unscaled_,
            "LossScaler::unscale_: already called since the last update(); "
            "unscaling twice would divide the gradients by the scale twice");
  check_params("LossScaler::unscale_", params);
  unscaled_ = true;
  flag_ = Tensor();
  if (params.empty()) return;
  const Device device = params[0].grad.device();
  flag_ = Tensor::zeros({1}, DType::Float32, device);
  // The reciprocal in double, then rounded once, as GradScaler does.
  const float inv_scale = static_cast<float>(1.0 / static_cast<double>(state_.scale));
  for (const ParamRef& p : params) {
    GTL_CHECK(p.grad.device() == device, "LossScaler::unscale_: gradients on "
                                             << device << " and " << p.grad.device()
                                             << "; one scaler handles one device");
    if (device.is_cuda()) {
#ifdef GTL_WITH_CUDA
      detail::unscale_cuda(p.grad, inv_scale, flag_);
      continue;
#else
      throw Error("LossScaler::unscale_ on " + device.str() + ": " + cuda_unavailable_reason());
#endif
    }
    GTL_DISPATCH_FLOATING(p.grad.dtype(), T, {
      T* g = p.grad.data<T>();
      for (int64_t i = 0; i < p.grad.numel(); ++i) {
        const float v = convert<float>(g[i]) * inv_scale;
        g[i] = convert<T>(v);
        if (!std::isfinite(v)) flag_.data<float>()[0] = 1.f;
      }
    });
  }
}

bool LossScaler::step(Optimizer& optimizer) {
  gtl::grading::reference_guard("gtl::optim::LossScaler::step");
  GTL_CHECK(!stepped_, "LossScaler::step: called twice without update() in between");
  stepped_ = true;
  if (!enabled()) {
    optimizer.step();
    return true;
  }
  if (!unscaled_) unscale_(optimizer.params());
  found_inf_ = flag_.defined() && flag_.item() != 0.f;
  if (!found_inf_) optimizer.step();
  return !found_inf_;
}

void LossScaler::update() {
  gtl::grading::reference_guard("gtl::optim::LossScaler::update");
  if (!enabled()) {
    stepped_ = false;
    return;
  }
  GTL_CHECK(unscaled_,
            "LossScaler::update: no inf/NaN check was recorded this step "
            "(call unscale_ or step first)");
  if (!stepped_) found_inf_ = flag_.defined() && flag_.item() != 0.f;
  if (found_inf_) {
    state_.scale *= options_.backoff_factor;
    state_.growth_tracker = 0;
  } else if (++state_.growth_tracker == options_.growth_interval) {
    const float grown = state_.scale * options_.growth_factor;
    if (std::isfinite(grown)) state_.scale = grown;
    state_.growth_tracker = 0;
  }
  unscaled_ = stepped_ = false;
}

void LossScaler::set_found_inf_flag(const Tensor& flag) {
  GTL_CHECK(unscaled_ && !stepped_,
            "LossScaler::set_found_inf_flag: only between unscale_ and step() (the flag of this "
            "step must exist and not have been read yet)");
  GTL_CHECK(flag.defined() && flag.numel() == 1 && flag.dtype() == DType::Float32,
            "LossScaler::set_found_inf_flag: expected a float32 tensor of one element");
  flag_ = flag;
}

void LossScaler::load_state(const LossScalerState& state) {
  GTL_CHECK(state.scale > 0.f && std::isfinite(state.scale) && state.growth_tracker >= 0,
            "LossScaler::load_state: expected a finite scale > 0 and a tracker >= 0, got "
                << state.scale << ", " << state.growth_tracker);
  state_ = state;
}

}  // namespace gtl::optim
