// SGD (see sgd.h): the CPU loop and the dispatch to the fused CUDA kernel.
#include "gtl/optim/sgd.h"

#include "gtl/optim/update_rules.h"
#ifdef GTL_WITH_CUDA
#include "gtl/optim/detail/sgd_cuda.h"
#endif

namespace gtl::optim {

namespace {

template <typename P, typename C>
void sgd_cpu(P* p, const P* g, float* buf, C* compute, int64_t n, const rules::SgdScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    const float updated =
        rules::sgd(convert<float>(p[i]), convert<float>(g[i]), buf ? buf + i : nullptr, s);
    p[i] = convert<P>(updated);
    if (compute) compute[i] = convert<C>(updated);
  }
}

}  // namespace

Sgd::Sgd(std::vector<ParamRef> params, SgdOptions options)
    : Optimizer(std::move(params)), options_(options) {
  check_params("Sgd", params_);
  GTL_CHECK(options_.lr >= 0.f && options_.momentum >= 0.f && options_.weight_decay >= 0.f,
            "Sgd: lr, momentum and weight_decay must be >= 0, got lr "
                << options_.lr << ", momentum " << options_.momentum << ", weight_decay "
                << options_.weight_decay);
  GTL_CHECK(!options_.nesterov || options_.momentum > 0.f, "Sgd: nesterov needs momentum > 0");
  if (options_.momentum != 0.f) {
    for (const ParamRef& p : params_) {
      momentum_.push_back(Tensor::zeros(p.value.shape(), DType::Float32, p.value.device()));
    }
  }
}

void Sgd::step() {
  const rules::SgdScalars s{options_.lr, options_.momentum, options_.weight_decay,
                            options_.nesterov, options_.momentum != 0.f};
  for (std::size_t i = 0; i < params_.size(); ++i) {
    const ParamRef& p = params_[i];
    const Tensor buf = s.use_momentum ? momentum_[i] : Tensor();
    if (p.value.is_cuda()) {
#ifdef GTL_WITH_CUDA
      cuda::sgd_step(p, buf, s);
      continue;
#else
      throw Error("Sgd::step on " + p.value.device().str() + ": " + cuda_unavailable_reason());
#endif
    }
    GTL_DISPATCH_PARAM(p, P, C, {
      sgd_cpu<P, C>(p.value.data<P>(), p.grad.data<P>(),
                    buf.defined() ? buf.data<float>() : nullptr,
                    p.compute.defined() ? p.compute.data<C>() : nullptr, p.value.numel(), s);
    });
  }
  ++step_count_;
}

NamedTensors Sgd::state() const {
  NamedTensors out;
  for (std::size_t i = 0; i < momentum_.size(); ++i) {
    out.emplace_back(param_name(params_, i) + ".momentum_buffer", momentum_[i]);
  }
  return out;
}

}  // namespace gtl::optim
