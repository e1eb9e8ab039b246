// Softmax and log-softmax: argument checks, the CPU rows (three passes: max, sum, write; sums
// in double), and dispatch to the CUDA path (softmax.cu).
#include "gtl/ops/softmax.h"

#include <cmath>
#include <limits>

#include "gtl/ops/detail/checks.h"
#include "gtl/runtime/device.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/softmax_cuda.h"
#endif

namespace gtl::ops {

namespace {

template <typename T>
void forward_cpu(bool log, const T* x, T* y, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* yr = y + r * cols;
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t c = 0; c < cols; ++c) m = std::fmax(m, convert<float>(xr[c]));
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(convert<float>(xr[c]) - m);
    if (log) {
      const float log_s = static_cast<float>(std::log(s));
      for (int64_t c = 0; c < cols; ++c) yr[c] = convert<T>((convert<float>(xr[c]) - m) - log_s);
    } else {
      const float inv_s = static_cast<float>(1.0 / s);
      for (int64_t c = 0; c < cols; ++c)
        yr[c] = convert<T>(std::exp(convert<float>(xr[c]) - m) * inv_s);
    }
  }
}

template <typename T>
void backward_cpu(bool log, const T* y, const T* dy, T* dx, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* yr = y + r * cols;
    const T* dyr = dy + r * cols;
    T* dxr = dx + r * cols;
    double dot = 0.0;  // softmax: sum dy*y; log_softmax: sum dy
    for (int64_t c = 0; c < cols; ++c)
      dot += log ? convert<float>(dyr[c]) : convert<float>(dyr[c]) * convert<float>(yr[c]);
    const float d = static_cast<float>(dot);
    for (int64_t c = 0; c < cols; ++c) {
      const float yv = convert<float>(yr[c]), g = convert<float>(dyr[c]);
      dxr[c] = convert<T>(log ? g - std::exp(yv) * d : yv * (g - d));
    }
  }
}

Tensor forward(const char* op, bool log, const Tensor& x) {
  detail::check_floating(op, "x", x);
  const detail::RowsCols rc = detail::rows_cols(op, "x", x);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    cuda::softmax_forward(log, x.data_ptr(), y.data_ptr(), x.dtype(), rc.rows, rc.cols,
                          current_stream().handle());
    return y;
#else
    detail::no_cuda(op);
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T,
                        { forward_cpu<T>(log, x.data<T>(), y.data<T>(), rc.rows, rc.cols); });
  return y;
}

Tensor backward(const char* op, bool log, const Tensor& y, const Tensor& dy) {
  check_same_device(op, {&y, &dy});
  detail::check_floating(op, "y", y);
  detail::check_same_shape_dtype(op, "y", y, "dy", dy);
  const detail::RowsCols rc = detail::rows_cols(op, "y", y);
  Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
  if (y.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(y.device());
    cuda::softmax_backward(log, y.data_ptr(), dy.data_ptr(), dx.data_ptr(), y.dtype(), rc.rows,
                           rc.cols, current_stream().handle());
    return dx;
#else
    detail::no_cuda(op);
#endif
  }
  GTL_DISPATCH_FLOATING(y.dtype(), T, {
    backward_cpu<T>(log, y.data<T>(), dy.data<T>(), dx.data<T>(), rc.rows, rc.cols);
  });
  return dx;
}

}  // namespace

Tensor softmax(const Tensor& x) {
  return forward("softmax", false, x);
}
Tensor log_softmax(const Tensor& x) {
  return forward("log_softmax", true, x);
}
Tensor softmax_backward(const Tensor& y, const Tensor& dy) {
  return backward("softmax_backward", false, y, dy);
}
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy) {
  return backward("log_softmax_backward", true, y, dy);
}

}  // namespace gtl::ops
