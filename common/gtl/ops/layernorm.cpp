// LayerNorm: argument checks, the CPU rows (two-pass statistics in double), and dispatch to the
// CUDA path (layernorm.cu).
#include "gtl/ops/layernorm.h"

#include <cmath>
#include <vector>

#include "gtl/ops/detail/checks.h"
#include "gtl/ops/detail/dispatch.h"
#include "gtl/runtime/device.h"
#include "gtl/tensor/dispatch.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/layernorm_cuda.h"
#endif

namespace gtl::ops {

namespace {

template <typename T, typename W>
void forward_cpu(const T* x, const W* weight, const W* bias, T* out, float* mean, float* rstd,
                 int64_t rows, int64_t cols, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    T* outr = out + r * cols;
    double s = 0.0;
    for (int64_t c = 0; c < cols; ++c) s += convert<float>(xr[c]);
    const double m = s / static_cast<double>(cols);
    double v = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const double d = convert<float>(xr[c]) - m;
      v += d * d;
    }
    const double rs = 1.0 / std::sqrt(v / static_cast<double>(cols) + eps);
    // x - mean in double: the mean rounded to float would be off by half an ulp of |mean|,
    // which for inputs near 1e4 is 5e-4, far more than the normalised values can afford.
    for (int64_t c = 0; c < cols; ++c) {
      const float xhat = static_cast<float>((convert<float>(xr[c]) - m) * rs);
      outr[c] = convert<T>(xhat * convert<float>(weight[c]) + convert<float>(bias[c]));
    }
    mean[r] = static_cast<float>(m);
    rstd[r] = static_cast<float>(rs);
  }
}

template <typename T, typename W>
void backward_cpu(const T* dout, const T* x, const W* weight, const float* mean, const float* rstd,
                  T* dx, float* dweight, float* dbias, int64_t rows, int64_t cols) {
  std::vector<double> dw(static_cast<std::size_t>(cols), 0.0), db(dw);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * cols;
    const T* gr = dout + r * cols;
    T* dxr = dx + r * cols;
    double sum_dxhat = 0.0, sum_dxhat_xhat = 0.0;
    for (int64_t c = 0; c < cols; ++c) {
      const float g = convert<float>(gr[c]);
      const float xhat = (convert<float>(xr[c]) - mean[r]) * rstd[r];
      const float dxhat = g * convert<float>(weight[c]);
      sum_dxhat += dxhat;
      sum_dxhat_xhat += dxhat * xhat;
      dw[c] += g * xhat;
      db[c] += g;
    }
    const float mean_dxhat = static_cast<float>(sum_dxhat / static_cast<double>(cols));
    const float mean_dxhat_xhat = static_cast<float>(sum_dxhat_xhat / static_cast<double>(cols));
    for (int64_t c = 0; c < cols; ++c) {
      const float xhat = (convert<float>(xr[c]) - mean[r]) * rstd[r];
      const float dxhat = convert<float>(gr[c]) * convert<float>(weight[c]);
      dxr[c] = convert<T>(rstd[r] * (dxhat - mean_dxhat - xhat * mean_dxhat_xhat));
    }
  }
  for (int64_t c = 0; c < cols; ++c) {
    dweight[c] = static_cast<float>(dw[c]);
    dbias[c] = static_cast<float>(db[c]);
  }
}

}  // namespace

LayerNormForward layernorm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                   float eps) {
  const char* op = "layernorm_forward";
  check_same_device(op, {&x, &weight, &bias});
  detail::check_floating(op, "x", x);
  const detail::RowsCols rc = detail::rows_cols(op, "x", x);
  GTL_CHECK(rc.cols > 0, op << ": x " << shape_str(x.shape()) << " has empty rows");
  detail::check_row_param(op, "weight", weight, x, rc.cols);
  detail::check_row_param(op, "bias", bias, x, rc.cols);
  GTL_CHECK(weight.dtype() == bias.dtype(), op << ": weight and bias dtypes differ: weight is "
                                               << dtype_name(weight.dtype()) << ", bias is "
                                               << dtype_name(bias.dtype()));
  LayerNormForward f{Tensor::empty(x.shape(), x.dtype(), x.device()),
                     Tensor::empty({rc.rows}, DType::Float32, x.device()),
                     Tensor::empty({rc.rows}, DType::Float32, x.device())};
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    cuda::layernorm_forward(x.data_ptr(), weight.data_ptr(), bias.data_ptr(), weight.dtype(),
                            f.out.data_ptr(), f.mean.data<float>(), f.rstd.data<float>(), x.dtype(),
                            rc.rows, rc.cols, eps, current_stream().handle());
    return f;
#else
    detail::no_cuda(op);
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T, {
    GTL_DISPATCH_FLOATING(weight.dtype(), W, {
      forward_cpu<T, W>(x.data<T>(), weight.data<W>(), bias.data<W>(), f.out.data<T>(),
                        f.mean.data<float>(), f.rstd.data<float>(), rc.rows, rc.cols, eps);
    });
  });
  return f;
}

LayerNormBackward layernorm_backward(const Tensor& dout, const Tensor& x, const Tensor& weight,
                                     const Tensor& mean, const Tensor& rstd) {
  const char* op = "layernorm_backward";
  check_same_device(op, {&dout, &x, &weight, &mean, &rstd});
  detail::check_floating(op, "x", x);
  detail::check_same_shape_dtype(op, "dout", dout, "x", x);
  const detail::RowsCols rc = detail::rows_cols(op, "x", x);
  GTL_CHECK(rc.cols > 0, op << ": x " << shape_str(x.shape()) << " has empty rows");
  detail::check_row_param(op, "weight", weight, x, rc.cols);
  check_shape(op, mean, {rc.rows});
  check_shape(op, rstd, {rc.rows});
  check_dtype(op, mean, DType::Float32);
  check_dtype(op, rstd, DType::Float32);
  LayerNormBackward b{Tensor::empty(x.shape(), x.dtype(), x.device()),
                      Tensor::empty({rc.cols}, DType::Float32, x.device()),
                      Tensor::empty({rc.cols}, DType::Float32, x.device())};
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    DeviceGuard guard(x.device());
    Tensor partials = Tensor::empty({cuda::layernorm_backward_partials_needed(rc.rows, rc.cols)},
                                    DType::Float32, x.device());
    cuda::layernorm_backward(dout.data_ptr(), x.data_ptr(), weight.data_ptr(), weight.dtype(),
                             mean.data<float>(), rstd.data<float>(), b.dx.data_ptr(),
                             b.dweight.data<float>(), b.dbias.data<float>(), partials.data<float>(),
                             x.dtype(), rc.rows, rc.cols, current_stream().handle());
    return b;
#else
    detail::no_cuda(op);
#endif
  }
  GTL_DISPATCH_FLOATING(x.dtype(), T, {
    GTL_DISPATCH_FLOATING(weight.dtype(), W, {
      backward_cpu<T, W>(dout.data<T>(), x.data<T>(), weight.data<W>(), mean.data<float>(),
                         rstd.data<float>(), b.dx.data<T>(), b.dweight.data<float>(),
                         b.dbias.data<float>(), rc.rows, rc.cols);
    });
  });
  return b;
}

}  // namespace gtl::ops
