// CPU path of the non-finite check (see non_finite.h), and the host-side wrapper that reads the
// device flag once for every tensor of the list.
#include "gtl/ops/non_finite.h"

#include <cmath>

#include "gtl/ops/detail/checks.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/non_finite_cuda.h"
#endif

namespace gtl::ops {

void non_finite_flag_(const std::vector<Tensor>& tensors, const Tensor& flag) {
  GTL_CHECK(
      flag.defined() && flag.dtype() == DType::Float32 && flag.numel() == 1,
      "non_finite_flag_: the flag must be a float32 tensor of one element, got " << flag.str(1));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    GTL_CHECK(t.defined(), "non_finite_flag_: tensor " << i << " is undefined");
    GTL_CHECK(is_floating(t.dtype()), "non_finite_flag_: expected floating-point tensors, tensor "
                                          << i << " is " << dtype_name(t.dtype()));
    GTL_CHECK(t.device() == flag.device(), "non_finite_flag_: tensor "
                                               << i << " is on " << t.device()
                                               << " but the flag is on " << flag.device());
  }
  if (flag.is_cuda()) {
#ifdef GTL_WITH_CUDA
    detail::non_finite_flag_cuda(tensors, flag);
    return;
#else
    detail::no_cuda("non_finite_flag_", flag);
#endif
  }
  for (const Tensor& t : tensors) {
    GTL_DISPATCH_FLOATING(t.dtype(), T, {
      const T* x = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (!std::isfinite(convert<float>(x[i]))) {
          flag.data<float>()[0] = 1.f;
          return;  // one non-finite value is enough
        }
      }
    });
  }
}

bool has_non_finite(const std::vector<Tensor>& tensors) {
  if (tensors.empty()) return false;
  const Tensor flag = Tensor::zeros({1}, DType::Float32, tensors[0].device());
  non_finite_flag_(tensors, flag);
  return flag.item() != 0.f;
}

}  // namespace gtl::ops
