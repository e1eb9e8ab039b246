// Gradient clipping (see grad_clip.h): the norm from ops::global_l2_norm, then one scaling pass.
#include "gtl/optim/grad_clip.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include "gtl/ops/global_norm.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/optim/detail/grad_clip_cuda.h"
#endif

namespace gtl::optim {

Tensor clip_grad_norm_(const std::vector<ParamRef>& params, float max_norm) {
  gtl::grading::reference_guard("gtl::optim::clip_grad_norm_");
  GTL_CHECK(max_norm > 0.f, "clip_grad_norm_: max_norm must be > 0, got " << max_norm);
  const Tensor norm = ops::global_l2_norm(grads_of(params));
  scale_by_clip_coef_(params, norm, max_norm);
  return norm;
}

void scale_by_clip_coef_(const std::vector<ParamRef>& params, const Tensor& norm, float max_norm) {
  gtl::grading::reference_guard("gtl::optim::scale_by_clip_coef_");
  GTL_CHECK(max_norm > 0.f, "scale_by_clip_coef_: max_norm must be > 0, got " << max_norm);
  GTL_CHECK(norm.defined() && norm.numel() == 1 && norm.dtype() == DType::Float32,
            "scale_by_clip_coef_: the total norm must be a float32 tensor of one element");
  if (norm.is_cuda()) {
#ifdef GTL_WITH_CUDA
    for (const ParamRef& p : params) detail::scale_by_clip_coef_cuda(p.grad, norm, max_norm);
#endif
    return;
  }
  const float coef = max_norm / (norm.data<float>()[0] + 1e-6f);
  if (coef >= 1.f) return;  // min(coef, 1) is 1: nothing to do (a NaN coef goes on)
  for (const ParamRef& p : params) {
    GTL_DISPATCH_FLOATING(p.grad.dtype(), T, {
      T* g = p.grad.data<T>();
      for (int64_t i = 0; i < p.grad.numel(); ++i) g[i] = convert<T>(convert<float>(g[i]) * coef);
    });
  }
}

}  // namespace gtl::optim
