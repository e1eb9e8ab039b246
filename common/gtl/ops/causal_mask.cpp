// ops::causal_mask_: checks, the CPU loop, dispatch to causal_mask.cu (see causal_mask.h).
#include "gtl/ops/causal_mask.h"

#include <limits>

#include "gtl/ops/detail/checks.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/causal_mask_cuda.h"
#endif

namespace gtl::ops {

void causal_mask_(const Tensor& scores) {
  detail::check_floating("causal_mask_", "scores", scores);
  GTL_CHECK(scores.dim() == 3 && scores.size(1) <= scores.size(2),
            "causal_mask_: expected scores [N, Tq, Tk] with Tq <= Tk (queries are the last Tq "
            "positions), got "
                << shape_str(scores.shape()));
  const int64_t n = scores.size(0), tq = scores.size(1), tk = scores.size(2);
  if (scores.numel() == 0) return;
  if (scores.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::causal_mask_(scores, n, tq, tk);
    return;
#else
    detail::no_cuda("causal_mask_", scores);
#endif
  }
  const int64_t shift = tk - tq;
  GTL_DISPATCH_FLOATING(scores.dtype(), T, {
    T* s = scores.data<T>();
    const T minus_inf = convert<T>(-std::numeric_limits<float>::infinity());
    for (int64_t b = 0; b < n; ++b)
      for (int64_t i = 0; i < tq; ++i)
        for (int64_t j = i + shift + 1; j < tk; ++j) s[(b * tq + i) * tk + j] = minus_inf;
  });
}

}  // namespace gtl::ops
