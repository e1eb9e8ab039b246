// Reductions: argument checks, the CPU loops (double accumulators, one pass), and dispatch to
// the CUDA path (reduce.cu).
#include "gtl/ops/reduce.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtl/ops/detail/checks.h"
#include "gtl/runtime/device.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/reduce_cuda.h"
#endif

namespace gtl::ops {

namespace {

enum class Op { Sum, Mean, Max };

template <typename T>
double sum_cpu(const T* x, int64_t n) {
  double acc = 0.0;
  for (int64_t i = 0; i < n; ++i) acc += convert<float>(x[i]);
  return acc;
}

// NaN propagates: a max that skipped NaN would hide a diverged training run.
template <typename T>
float max_cpu(const T* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) {
    const float v = convert<float>(x[i]);
    if (std::isnan(v)) return v;
    m = v > m ? v : m;
  }
  return m;
}

// Row by row, adding each row into the column accumulators: both streams are contiguous.
template <typename T>
void sum_rows_cpu(const T* x, int64_t rows, int64_t cols, float* out) {
  std::vector<double> acc(static_cast<std::size_t>(cols), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    for (int64_t c = 0; c < cols; ++c) acc[c] += convert<float>(xr[c]);
  }
  for (int64_t c = 0; c < cols; ++c) out[c] = static_cast<float>(acc[c]);
}

Tensor reduce_all(const char* name, Op op, const Tensor& x) {
  detail::check_floating(name, "x", x);
  const int64_t n = x.numel();
  GTL_CHECK(op != Op::Max || n > 0,
            name << ": the max of an empty tensor " << shape_str(x.shape()) << " is undefined");
  Tensor out = Tensor::empty({1}, DType::Float32, x.device());
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    Tensor partials = Tensor::empty({cuda::reduce_partials_needed(n)}, DType::Float32, x.device());
    // The mean of nothing is NaN (0 / 0, as on the CPU); the sum of nothing is 0.
    const float multiplier = op != Op::Mean ? 1.f
                             : n == 0       ? std::nanf("")
                                            : 1.f / static_cast<float>(n);
    cuda::reduce_all(op == Op::Max ? cuda::ReduceOp::Max : cuda::ReduceOp::Sum, x.data_ptr(),
                     x.dtype(), n, multiplier, partials.data<float>(), out.data<float>(),
                     current_stream().handle());
    return out;
#else
    detail::no_cuda(name);
#endif
  }
  float result = 0.f;
  GTL_DISPATCH_FLOATING(x.dtype(), T, {
    if (op == Op::Max) {
      result = max_cpu<T>(x.data<T>(), n);
    } else {
      const double s = sum_cpu<T>(x.data<T>(), n);
      result = static_cast<float>(op == Op::Mean ? s / static_cast<double>(n) : s);
    }
  });
  out.data<float>()[0] = result;
  return out;
}

}  // namespace

Tensor sum(const Tensor& x) {
  return reduce_all("sum", Op::Sum, x);
}
Tensor mean(const Tensor& x) {
  return reduce_all("mean", Op::Mean, x);
}
Tensor max(const Tensor& x) {
  return reduce_all("max", Op::Max, x);
}

Tensor sum_rows(const Tensor& x) {
  detail::check_floating("sum_rows", "x", x);
  const detail::RowsCols rc = detail::rows_cols("sum_rows", "x", x);
  Tensor out = Tensor::empty({rc.cols}, DType::Float32, x.device());
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    Tensor partials = Tensor::empty({cuda::sum_rows_partials_needed(rc.rows, rc.cols)},
                                    DType::Float32, x.device());
    cuda::sum_rows(x.data_ptr(), x.dtype(), rc.rows, rc.cols, partials.data<float>(),
                   out.data<float>(), current_stream().handle());
    return out;
#else
    detail::no_cuda("sum_rows");
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T,
                        { sum_rows_cpu<T>(x.data<T>(), rc.rows, rc.cols, out.data<float>()); });
  return out;
}

}  // namespace gtl::ops
