// Element-wise ops: argument checks, the CPU loops, and dispatch to the CUDA path
// (elementwise.cu). The CPU loops are plain contiguous loops over raw pointers that the compiler
// vectorises; 16-bit values are widened to float, computed, and rounded back once.
#include "gtl/ops/elementwise.h"

#include "gtl/ops/detail/checks.h"
#include "gtl/runtime/device.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/elementwise_cuda.h"
#endif

namespace gtl::ops {

namespace {

enum class Binary { Add, Mul };

template <typename T>
void binary_cpu(Binary op, const T* a, const T* b, T* out, int64_t n) {
  if (op == Binary::Add) {
    for (int64_t i = 0; i < n; ++i)
      out[i] = convert<T>(convert<float>(a[i]) + convert<float>(b[i]));
  } else {
    for (int64_t i = 0; i < n; ++i)
      out[i] = convert<T>(convert<float>(a[i]) * convert<float>(b[i]));
  }
}

template <typename T>
void scale_cpu(float alpha, const T* x, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = convert<T>(alpha * convert<float>(x[i]));
}

template <typename T>
void axpy_cpu(float alpha, const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = convert<T>(convert<float>(y[i]) + alpha * convert<float>(x[i]));
}

template <typename T, typename B>
void bias_add_cpu(const T* x, const B* bias, T* out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* outr = out + r * cols;
    for (int64_t c = 0; c < cols; ++c)
      outr[c] = convert<T>(convert<float>(xr[c]) + convert<float>(bias[c]));
  }
}

// out = a (op) b; out may be a itself.
void binary_into(const char* op_name, Binary op, const Tensor& a, const Tensor& b,
                 const Tensor& out) {
  check_same_device(op_name, {&a, &b});
  detail::check_floating(op_name, "a", a);
  detail::check_same_shape_dtype(op_name, "a", a, "b", b);
  const int64_t n = a.numel();
  if (a.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(a.device());
    cuda::binary(op == Binary::Add ? cuda::BinaryOp::Add : cuda::BinaryOp::Mul, a.data_ptr(),
                 b.data_ptr(), out.data_ptr(), a.dtype(), n, current_stream().handle());
    return;
#else
    detail::no_cuda(op_name);
#endif
  }
  GTL_DISPATCH_FLOATING(a.dtype(), T,
                        { binary_cpu<T>(op, a.data<T>(), b.data<T>(), out.data<T>(), n); });
}

void scale_into(const char* op_name, float alpha, const Tensor& x, const Tensor& out) {
  detail::check_floating(op_name, "x", x);
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    cuda::scale(alpha, x.data_ptr(), out.data_ptr(), x.dtype(), x.numel(),
                current_stream().handle());
    return;
#else
    detail::no_cuda(op_name);
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T,
                        { scale_cpu<T>(alpha, x.data<T>(), out.data<T>(), x.numel()); });
}

void bias_add_into(const char* op_name, const Tensor& x, const Tensor& bias, const Tensor& out) {
  check_same_device(op_name, {&x, &bias});
  detail::check_floating(op_name, "x", x);
  const detail::RowsCols rc = detail::rows_cols(op_name, "x", x);
  detail::check_row_param(op_name, "bias", bias, x, rc.cols);
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    cuda::bias_add(x.data_ptr(), bias.data_ptr(), bias.dtype(), out.data_ptr(), x.dtype(), rc.rows,
                   rc.cols, current_stream().handle());
    return;
#else
    detail::no_cuda(op_name);
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T, {
    GTL_DISPATCH_FLOATING(bias.dtype(), B, {
      bias_add_cpu<T, B>(x.data<T>(), bias.data<B>(), out.data<T>(), rc.rows, rc.cols);
    });
  });
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  binary_into("add", Binary::Add, a, b, out);
  return out;
}

void add_(const Tensor& a, const Tensor& b) {
  binary_into("add_", Binary::Add, a, b, a);
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  binary_into("mul", Binary::Mul, a, b, out);
  return out;
}

void mul_(const Tensor& a, const Tensor& b) {
  binary_into("mul_", Binary::Mul, a, b, a);
}

Tensor scale(const Tensor& x, float alpha) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  scale_into("scale", alpha, x, out);
  return out;
}

void scale_(const Tensor& x, float alpha) {
  scale_into("scale_", alpha, x, x);
}

void axpy_(float alpha, const Tensor& x, const Tensor& y) {
  check_same_device("axpy_", {&x, &y});
  detail::check_floating("axpy_", "x", x);
  detail::check_same_shape_dtype("axpy_", "x", x, "y", y);
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    cuda::axpy(alpha, x.data_ptr(), y.data_ptr(), x.dtype(), x.numel(), current_stream().handle());
    return;
#else
    detail::no_cuda("axpy_");
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T, { axpy_cpu<T>(alpha, x.data<T>(), y.data<T>(), x.numel()); });
}

Tensor bias_add(const Tensor& x, const Tensor& bias) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  bias_add_into("bias_add", x, bias, out);
  return out;
}

void bias_add_(const Tensor& x, const Tensor& bias) {
  bias_add_into("bias_add_", x, bias, x);
}

}  // namespace gtl::ops
