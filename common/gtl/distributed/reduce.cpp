// The arithmetic of the ring algorithms: dst = op(dst, src) element by element, and the final
// division of an average. CPU loops here; the CUDA kernels in reduce_kernels.cu.
//
// 16-bit floats are widened to float, combined, and rounded back once per ring step, as NCCL
// does: a ring sum of N fp16 values rounds N-1 times, so it is exact only for small integers.
#include "gtl/distributed/communicator.h"
#include "gtl/distributed/reduce_ops.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/distributed/reduce_kernels.h"
#endif

namespace gtl::dist {

namespace {

template <typename T, typename F>
void combine(T* dst, const T* src, int64_t n, F f) {
  // Accumulate in float for 16-bit floats, in T otherwise.
  using Acc = std::conditional_t<std::is_same_v<T, half> || std::is_same_v<T, bfloat16>, float, T>;
  for (int64_t i = 0; i < n; ++i)
    dst[i] = convert<T>(f(convert<Acc>(dst[i]), convert<Acc>(src[i])));
}

// One loop per operation (the switch stays out of the loop, so the compiler can vectorise it).
template <typename T>
void reduce_cpu(T* dst, const T* src, int64_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::Max:
      return combine(dst, src, n, [](auto a, auto b) { return detail::nan_max(a, b); });
    case ReduceOp::Min:
      return combine(dst, src, n, [](auto a, auto b) { return detail::nan_min(a, b); });
    default:  // Sum, and Avg before its division
      return combine(dst, src, n, [](auto a, auto b) { return static_cast<decltype(a)>(a + b); });
  }
}

}  // namespace

void reduce_into(const Tensor& dst, const Tensor& src, ReduceOp op) {
  GTL_CHECK(dst.numel() == src.numel() && dst.dtype() == src.dtype(),
            "reduce_into: expected equal sizes and dtypes, got "
                << dst.numel() << " " << dtype_name(dst.dtype()) << " and " << src.numel() << " "
                << dtype_name(src.dtype()));
  check_same_device("reduce_into", {&dst, &src});
  if (dst.numel() == 0) return;
  if (dst.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(dst.device());
    reduce_kernels::reduce_into(dst.data_ptr(), src.data_ptr(), dst.numel(), dst.dtype(),
                                static_cast<int>(op), current_stream().handle());
    return;
#else
    throw Error("reduce_into on " + dst.device().str() + ": " + cuda_unavailable_reason());
#endif
  }
  GTL_DISPATCH_ALL(dst.dtype(), T, { reduce_cpu(dst.data<T>(), src.data<T>(), dst.numel(), op); });
}

void divide_(const Tensor& dst, int n) {
  if (dst.numel() == 0) return;
  if (dst.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(dst.device());
    reduce_kernels::divide(dst.data_ptr(), dst.numel(), dst.dtype(), n, current_stream().handle());
    return;
#else
    throw Error("divide_ on " + dst.device().str() + ": " + cuda_unavailable_reason());
#endif
  }
  GTL_DISPATCH_FLOATING(dst.dtype(), T, {
    T* d = dst.data<T>();
    for (int64_t i = 0; i < dst.numel(); ++i) d[i] = convert<T>(convert<float>(d[i]) / n);
  });
}

}  // namespace gtl::dist
