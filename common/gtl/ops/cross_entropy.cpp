// Cross-entropy and accuracy: argument checks, the CPU rows, and dispatch to the CUDA path
// (cross_entropy.cu). Both paths produce one float per row (a loss, or 1/0 for a correct
// prediction); the mean over rows is then ops::mean, the same deterministic reduction as
// everywhere else.
#include "gtl/ops/cross_entropy.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include <cmath>
#include <limits>

#include "gtl/ops/detail/checks.h"
#include "gtl/ops/detail/dispatch.h"
#include "gtl/ops/reduce.h"
#include "gtl/runtime/device.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/cross_entropy_cuda.h"
#endif

namespace gtl::ops {

namespace {

// Returns the rows x cols view of logits after checking labels against it.
detail::RowsCols check_args(const char* op, const Tensor& logits, const Tensor& labels) {
  check_same_device(op, {&logits, &labels});
  detail::check_floating(op, "logits", logits);
  GTL_CHECK(
      labels.dtype() == DType::Int32 || labels.dtype() == DType::Int64,
      op << ": labels must be int32 or int64 class indices, got " << dtype_name(labels.dtype()));
  const detail::RowsCols rc = detail::rows_cols(op, "logits", logits);
  const Shape expected(logits.shape().begin(), logits.shape().end() - 1);
  GTL_CHECK(labels.shape() == expected,
            op << ": labels must have the shape of logits without the class dimension: logits is "
               << shape_str(logits.shape()) << ", so labels should be " << shape_str(expected)
               << ", got " << shape_str(labels.shape()));
  GTL_CHECK(rc.cols > 0, op << ": logits " << shape_str(logits.shape()) << " have no classes");
  return rc;
}

template <typename L>
int64_t checked_label(const char* op, const L* labels, int64_t r, int64_t cols) {
  const int64_t label = static_cast<int64_t>(labels[r]);
  GTL_CHECK(label >= 0 && label < cols, op << ": label " << label << " of row " << r
                                           << " is outside the classes [0, " << cols << ")");
  return label;
}

struct RowStats {
  float m;   // row max
  double s;  // sum_j exp(x_j - m)
};

template <typename T>
RowStats row_stats(const T* x, int64_t cols) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t c = 0; c < cols; ++c) m = std::fmax(m, convert<float>(x[c]));
  double s = 0.0;
  for (int64_t c = 0; c < cols; ++c) s += std::exp(convert<float>(x[c]) - m);
  return {m, s};
}

template <typename T, typename L>
void losses_cpu(const T* x, const L* labels, int64_t rows, int64_t cols, float* losses) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const int64_t label = checked_label("cross_entropy", labels, r, cols);
    const RowStats st = row_stats(xr, cols);
    losses[r] = static_cast<float>(std::log(st.s) + (st.m - convert<float>(xr[label])));
  }
}

template <typename T, typename L>
void backward_cpu(const T* x, const L* labels, int64_t rows, int64_t cols, float scale, T* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* dxr = dx + r * cols;
    const int64_t label = checked_label("cross_entropy_backward", labels, r, cols);
    const RowStats st = row_stats(xr, cols);
    const float inv_s = static_cast<float>(1.0 / st.s);
    for (int64_t c = 0; c < cols; ++c) {
      const float p = std::exp(convert<float>(xr[c]) - st.m) * inv_s;
      dxr[c] = convert<T>(scale * (p - (c == label ? 1.f : 0.f)));
    }
  }
}

template <typename T, typename L>
void accuracy_cpu(const T* x, const L* labels, int64_t rows, int64_t cols, float* correct) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const int64_t label = checked_label("accuracy", labels, r, cols);
    int64_t best = 0;  // the first index of the largest logit, as torch.argmax
    float best_v = convert<float>(xr[0]);
    for (int64_t c = 1; c < cols; ++c) {
      const float v = convert<float>(xr[c]);
      if (v > best_v) {
        best_v = v;
        best = c;
      }
    }
    correct[r] = best == label ? 1.f : 0.f;
  }
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& labels) {
  gtl::grading::reference_guard("gtl::ops::cross_entropy");
  const detail::RowsCols rc = check_args("cross_entropy", logits, labels);
  Tensor losses = Tensor::empty({rc.rows}, DType::Float32, logits.device());
  if (logits.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(logits.device());
    cuda::cross_entropy_rows(logits.data_ptr(), logits.dtype(), labels.data_ptr(), labels.dtype(),
                             rc.rows, rc.cols, losses.data<float>(), current_stream().handle());
    return mean(losses);
#else
    detail::no_cuda("cross_entropy");
#endif
  }
  GTL_DISPATCH_FLOATING(logits.dtype(), T, {
    GTL_DISPATCH_LABELS(labels.dtype(), L, {
      losses_cpu<T, L>(logits.data<T>(), labels.data<L>(), rc.rows, rc.cols, losses.data<float>());
    });
  });
  return mean(losses);
}

Tensor cross_entropy_backward(const Tensor& logits, const Tensor& labels, float dloss) {
  gtl::grading::reference_guard("gtl::ops::cross_entropy_backward");
  const detail::RowsCols rc = check_args("cross_entropy_backward", logits, labels);
  Tensor dlogits = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
  const float scale = rc.rows > 0 ? dloss / static_cast<float>(rc.rows) : 0.f;
  if (logits.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(logits.device());
    cuda::cross_entropy_backward(logits.data_ptr(), logits.dtype(), labels.data_ptr(),
                                 labels.dtype(), rc.rows, rc.cols, scale, dlogits.data_ptr(),
                                 current_stream().handle());
    return dlogits;
#else
    detail::no_cuda("cross_entropy_backward");
#endif
  }
  GTL_DISPATCH_FLOATING(logits.dtype(), T, {
    GTL_DISPATCH_LABELS(labels.dtype(), L, {
      backward_cpu<T, L>(logits.data<T>(), labels.data<L>(), rc.rows, rc.cols, scale,
                         dlogits.data<T>());
    });
  });
  return dlogits;
}

Tensor accuracy(const Tensor& logits, const Tensor& labels) {
  const detail::RowsCols rc = check_args("accuracy", logits, labels);
  Tensor correct = Tensor::empty({rc.rows}, DType::Float32, logits.device());
  if (logits.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(logits.device());
    cuda::accuracy_rows(logits.data_ptr(), logits.dtype(), labels.data_ptr(), labels.dtype(),
                        rc.rows, rc.cols, correct.data<float>(), current_stream().handle());
    return mean(correct);
#else
    detail::no_cuda("accuracy");
#endif
  }
  GTL_DISPATCH_FLOATING(logits.dtype(), T, {
    GTL_DISPATCH_LABELS(labels.dtype(), L, {
      accuracy_cpu<T, L>(logits.data<T>(), labels.data<L>(), rc.rows, rc.cols,
                         correct.data<float>());
    });
  });
  return mean(correct);
}

}  // namespace gtl::ops
