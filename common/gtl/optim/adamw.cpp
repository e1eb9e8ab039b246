// AdamW (see adamw.h): the CPU loop and the dispatch to the fused CUDA kernel. The bias
// corrections depend only on the step count, so they are computed once per step on the host in
// double and handed to every element as float32 constants.
#include "gtl/optim/adamw.h"

#include <cmath>

#include "gtl/optim/update_rules.h"
#ifdef GTL_WITH_CUDA
#include "gtl/optim/detail/adamw_cuda.h"
#endif

namespace gtl::optim {

namespace {

template <typename P, typename C>
void adamw_cpu(P* p, const P* g, float* m, float* v, C* compute, int64_t n,
               const rules::AdamWScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    const float updated = rules::adamw(convert<float>(p[i]), convert<float>(g[i]), m + i, v + i, s);
    p[i] = convert<P>(updated);
    if (compute) compute[i] = convert<C>(updated);
  }
}

}  // namespace

AdamW::AdamW(std::vector<ParamRef> params, AdamWOptions options)
    : Optimizer(std::move(params)), options_(options) {
  check_params("AdamW", params_);
  GTL_CHECK(options_.lr >= 0.f && options_.eps >= 0.f && options_.weight_decay >= 0.f,
            "AdamW: lr, eps and weight_decay must be >= 0, got lr "
                << options_.lr << ", eps " << options_.eps << ", weight_decay "
                << options_.weight_decay);
  GTL_CHECK(options_.beta1 >= 0.f && options_.beta1 < 1.f && options_.beta2 >= 0.f &&
                options_.beta2 < 1.f,
            "AdamW: betas must lie in [0, 1), got " << options_.beta1 << ", " << options_.beta2);
  for (const ParamRef& p : params_) {
    m_.push_back(Tensor::zeros(p.value.shape(), DType::Float32, p.value.device()));
    v_.push_back(Tensor::zeros(p.value.shape(), DType::Float32, p.value.device()));
  }
}

void AdamW::step() {
  ++step_count_;
  const double t = static_cast<double>(step_count_);
  const double lr = options_.lr;
  rules::AdamWScalars s{};
  s.beta1 = options_.beta1;
  s.beta2 = options_.beta2;
  s.eps = options_.eps;
  s.decay = static_cast<float>(1.0 - lr * options_.weight_decay);
  s.step_size = static_cast<float>(lr / (1.0 - std::pow(double{options_.beta1}, t)));
  s.bias_correction2_sqrt =
      static_cast<float>(std::sqrt(1.0 - std::pow(double{options_.beta2}, t)));
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamRef& p = params_[i];
    if (p.value.is_cuda()) {
#ifdef GTL_WITH_CUDA
      cuda::adamw_step(p, m_[i], v_[i], s);
      continue;
#else
      throw Error("AdamW::step on " + p.value.device().str() + ": " + cuda_unavailable_reason());
#endif
    }
    GTL_DISPATCH_PARAM(p, P, C, {
      adamw_cpu<P, C>(p.value.data<P>(), p.grad.data<P>(), m_[i].data<float>(), v_[i].data<float>(),
                      p.compute.defined() ? p.compute.data<C>() : nullptr, p.value.numel(), s);
    });
  }
}

NamedTensors AdamW::state() const {
  NamedTensors out;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    out.emplace_back(param_name(params_, i) + ".exp_avg", m_[i]);
    out.emplace_back(param_name(params_, i) + ".exp_avg_sq", v_[i]);
  }
  return out;
}

}  // namespace gtl::optim
