// CPU path of the global L2 norm (see global_norm.h): squares summed in double, one pass per
// tensor, then one sqrt. Double keeps the sum exact enough for a reference even over 1e8 values.
#include "gtl/ops/global_norm.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include <cmath>

#include "gtl/ops/detail/checks.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/global_norm_cuda.h"
#endif

namespace gtl::ops {

namespace {

void check_inputs(const std::vector<Tensor>& tensors) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    GTL_CHECK(t.defined(), "global_l2_norm: tensor " << i << " is undefined");
    GTL_CHECK(is_floating(t.dtype()), "global_l2_norm: expected floating-point tensors, tensor "
                                          << i << " is " << dtype_name(t.dtype()));
    GTL_CHECK(t.device() == tensors[0].device(), "global_l2_norm: tensors on different devices: "
                                                     << tensors[0].device() << " and " << t.device()
                                                     << " (tensor " << i << ")");
  }
}

}  // namespace

Tensor global_l2_norm(const std::vector<Tensor>& tensors) {
  gtl::grading::reference_guard("gtl::ops::global_l2_norm");
  check_inputs(tensors);
  if (!tensors.empty() && tensors[0].is_cuda()) {
#ifdef GTL_WITH_CUDA
    return detail::global_l2_norm_cuda(tensors);
#else
    detail::no_cuda("global_l2_norm", tensors[0]);
#endif
  }
  double sum = 0.0;
  for (const Tensor& t : tensors) {
    GTL_DISPATCH_FLOATING(t.dtype(), T, {
      const T* x = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double v = convert<float>(x[i]);
        sum += v * v;
      }
    });
  }
  return Tensor::full({1}, std::sqrt(sum), DType::Float32, Device::cpu());
}

}  // namespace gtl::ops
