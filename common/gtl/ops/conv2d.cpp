// ops::conv2d_*: checks at the door, then the CPU path (im2col + OpenBLAS GEMM, below) or the
// cuDNN path (conv2d.cu).
//
// im2col in one picture, for one image, C = 1, a 2x2 kernel, stride 1, no padding:
//
//   x = a b c        columns = one receptive field each:   a b d e
//       d e f                                              b c e f
//       g h i                                              d e g h
//                                                          e f h i    [C*R*S, P*Q] = [4, 4]
//
// Then y = W [K, C*R*S] x columns [C*R*S, P*Q]: one GEMM per image. The backward passes are the
// two other GEMMs of the same product: dcolumns = W^T dy (then col2im adds every column back
// into the pixels it came from) and dW += dy columns^T.
#include "gtl/ops/conv2d.h"
#include "gtl/ops/detail/checks.h"

#include <cblas.h>

#include <vector>

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/conv2d_cuda.h"
#endif

namespace gtl::ops {

namespace {

// Sizes of one convolution, named as in the header: x [N, C, H, W], w [K, C, R, S], y [N, K, P, Q].
struct ConvDims {
  int64_t n, c, h, w, k, r, s, p, q;
  int64_t sh, sw, ph, pw;
  int64_t col_rows() const { return c * r * s; }
  int64_t col_cols() const { return p * q; }
};

ConvDims conv_dims(const Shape& x, const Shape& w, const Conv2dParams& prm) {
  const Shape y = conv2d_output_shape(x, w, prm);
  return {x[0], x[1], x[2],         x[3],         w[0],      w[2],     w[3],
          y[2], y[3], prm.stride_h, prm.stride_w, prm.pad_h, prm.pad_w};
}

void check_float_operands(const char* op, std::initializer_list<const Tensor*> ts) {
  check_same_device(op, ts);
  const Tensor* first = *ts.begin();
  GTL_CHECK(is_floating(first->dtype()),
            op << ": expected float32, float16 or bfloat16, got " << dtype_name(first->dtype()));
  for (const Tensor* t : ts) check_dtype(op, *t, first->dtype());
}

// Row-major sgemm on raw pointers: C = op(A) op(B) + beta C.
void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.f, a,
              static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// Unrolls one image [C, H, W] into columns [C*R*S, P*Q]; padded taps read as 0.
void im2col(const float* x, const ConvDims& d, float* col) {
  for (int64_t c = 0; c < d.c; ++c)
    for (int64_t r = 0; r < d.r; ++r)
      for (int64_t s = 0; s < d.s; ++s) {
        float* row = col + ((c * d.r + r) * d.s + s) * d.col_cols();
        for (int64_t p = 0; p < d.p; ++p) {
          const int64_t ih = p * d.sh - d.ph + r;
          for (int64_t q = 0; q < d.q; ++q) {
            const int64_t iw = q * d.sw - d.pw + s;
            const bool inside = ih >= 0 && ih < d.h && iw >= 0 && iw < d.w;
            row[p * d.q + q] = inside ? x[(c * d.h + ih) * d.w + iw] : 0.f;
          }
        }
      }
}

// The adjoint of im2col: adds every column entry back into the pixel it was read from
// (a pixel inside several receptive fields receives several contributions).
void col2im(const float* col, const ConvDims& d, float* x) {
  for (int64_t c = 0; c < d.c; ++c)
    for (int64_t r = 0; r < d.r; ++r)
      for (int64_t s = 0; s < d.s; ++s) {
        const float* row = col + ((c * d.r + r) * d.s + s) * d.col_cols();
        for (int64_t p = 0; p < d.p; ++p) {
          const int64_t ih = p * d.sh - d.ph + r;
          if (ih < 0 || ih >= d.h) continue;
          for (int64_t q = 0; q < d.q; ++q) {
            const int64_t iw = q * d.sw - d.pw + s;
            if (iw >= 0 && iw < d.w) x[(c * d.h + ih) * d.w + iw] += row[p * d.q + q];
          }
        }
      }
}

void forward_cpu(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                 const ConvDims& d) {
  std::vector<float> col(static_cast<std::size_t>(d.col_rows() * d.col_cols()));
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  for (int64_t n = 0; n < d.n; ++n) {
    im2col(xp + n * d.c * d.h * d.w, d, col.data());
    float* yn = yp + n * d.k * d.col_cols();
    // y_n [K, P*Q] = w [K, C*R*S] col [C*R*S, P*Q]
    sgemm(false, false, d.k, d.col_cols(), d.col_rows(), w.data<float>(), d.col_rows(), col.data(),
          d.col_cols(), 0.f, yn, d.col_cols());
    if (bias.defined()) {
      const float* bp = bias.data<float>();
      for (int64_t k = 0; k < d.k; ++k)
        for (int64_t i = 0; i < d.col_cols(); ++i) yn[k * d.col_cols() + i] += bp[k];
    }
  }
}

void backward_data_cpu(const Tensor& dy, const Tensor& w, Tensor dx, const ConvDims& d) {
  std::vector<float> col(static_cast<std::size_t>(d.col_rows() * d.col_cols()));
  dx.zero_();
  for (int64_t n = 0; n < d.n; ++n) {
    // dcol [C*R*S, P*Q] = w^T [C*R*S, K] dy_n [K, P*Q]
    sgemm(true, false, d.col_rows(), d.col_cols(), d.k, w.data<float>(), d.col_rows(),
          dy.data<float>() + n * d.k * d.col_cols(), d.col_cols(), 0.f, col.data(), d.col_cols());
    col2im(col.data(), d, dx.data<float>() + n * d.c * d.h * d.w);
  }
}

void backward_weight_cpu(const Tensor& dy, const Tensor& x, Tensor dw, const ConvDims& d) {
  std::vector<float> col(static_cast<std::size_t>(d.col_rows() * d.col_cols()));
  dw.zero_();
  for (int64_t n = 0; n < d.n; ++n) {
    im2col(x.data<float>() + n * d.c * d.h * d.w, d, col.data());
    // dw [K, C*R*S] += dy_n [K, P*Q] col^T [P*Q, C*R*S]
    sgemm(false, true, d.k, d.col_rows(), d.col_cols(), dy.data<float>() + n * d.k * d.col_cols(),
          d.col_cols(), col.data(), d.col_cols(), 1.f, dw.data<float>(), d.col_rows());
  }
}

// Runs a float32 CPU body on 16-bit inputs: widen the inputs, compute, round the output once.
template <typename Body>
void via_float32(Tensor out, std::initializer_list<Tensor> inputs, Body body) {
  std::vector<Tensor> wide;
  for (const Tensor& t : inputs) wide.push_back(t.defined() ? t.to(DType::Float32) : t);
  Tensor out32 = Tensor::empty(out.shape());
  body(wide, out32);
  out.copy_(out32.to(out.dtype()));
}

}  // namespace

Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  GTL_CHECK(x.size() == 4 && w.size() == 4,
            "conv2d: expected x [N, C, H, W] and w [K, C, R, S], got x "
                << shape_str(x) << " and w " << shape_str(w));
  GTL_CHECK(x[1] == w[1], "conv2d: x " << shape_str(x) << " has " << x[1]
                                       << " channels but the filters w " << shape_str(w)
                                       << " expect " << w[1]);
  GTL_CHECK(p.stride_h > 0 && p.stride_w > 0 && p.pad_h >= 0 && p.pad_w >= 0,
            "conv2d: strides must be positive and paddings non-negative, got stride ("
                << p.stride_h << ", " << p.stride_w << ") padding (" << p.pad_h << ", " << p.pad_w
                << ")");
  const int64_t hp = x[2] + 2 * p.pad_h, wp = x[3] + 2 * p.pad_w;
  GTL_CHECK(w[2] <= hp && w[3] <= wp && w[2] > 0 && w[3] > 0,
            "conv2d: kernel " << w[2] << "x" << w[3] << " of w " << shape_str(w)
                              << " does not fit the padded input " << hp << "x" << wp << " of x "
                              << shape_str(x));
  return {x[0], w[0], (hp - w[2]) / p.stride_h + 1, (wp - w[3]) / p.stride_w + 1};
}

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p) {
  GTL_CHECK(x.defined() && w.defined(), "conv2d_forward: x or w is an undefined tensor");
  check_float_operands("conv2d_forward", {&x, &w});
  const ConvDims d = conv_dims(x.shape(), w.shape(), p);
  if (bias.defined()) {
    check_float_operands("conv2d_forward (bias)", {&x, &bias});
    check_shape("conv2d_forward (bias, one per filter)", bias, Shape{d.k});
  }
  Tensor y = Tensor::empty(conv2d_output_shape(x.shape(), w.shape(), p), x.dtype(), x.device());
  if (y.numel() == 0) return y;
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::conv2d_forward(x, w, bias, y, p);
    return y;
#else
    detail::no_cuda("conv2d_forward", x);
#endif
  }
  if (x.dtype() == DType::Float32) {
    forward_cpu(x, w, bias, y, d);
  } else {
    via_float32(y, {x, w, bias}, [&](const std::vector<Tensor>& in, const Tensor& out) {
      forward_cpu(in[0], in[1], in[2], out, d);
    });
  }
  return y;
}

Tensor conv2d_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape,
                            const Conv2dParams& p) {
  GTL_CHECK(dy.defined() && w.defined(), "conv2d_backward_data: dy or w is undefined");
  check_float_operands("conv2d_backward_data", {&dy, &w});
  const ConvDims d = conv_dims(x_shape, w.shape(), p);
  check_shape("conv2d_backward_data (dy = dL/dy has the forward output's shape)", dy,
              conv2d_output_shape(x_shape, w.shape(), p));
  Tensor dx = Tensor::empty(x_shape, dy.dtype(), dy.device());
  if (dx.numel() == 0) return dx;
  if (dy.numel() == 0) {
    dx.zero_();
    return dx;
  }
  if (dy.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::conv2d_backward_data(dy, w, dx, p);
    return dx;
#else
    detail::no_cuda("conv2d_backward_data", dy);
#endif
  }
  if (dy.dtype() == DType::Float32) {
    backward_data_cpu(dy, w, dx, d);
  } else {
    via_float32(dx, {dy, w}, [&](const std::vector<Tensor>& in, const Tensor& out) {
      backward_data_cpu(in[0], in[1], out, d);
    });
  }
  return dx;
}

Tensor conv2d_backward_weight(const Tensor& dy, const Tensor& x, const Shape& w_shape,
                              const Conv2dParams& p) {
  GTL_CHECK(dy.defined() && x.defined(), "conv2d_backward_weight: dy or x is undefined");
  check_float_operands("conv2d_backward_weight", {&dy, &x});
  const ConvDims d = conv_dims(x.shape(), w_shape, p);
  check_shape("conv2d_backward_weight (dy = dL/dy has the forward output's shape)", dy,
              conv2d_output_shape(x.shape(), w_shape, p));
  Tensor dw = Tensor::empty(w_shape, dy.dtype(), dy.device());
  if (dw.numel() == 0) return dw;
  if (dy.numel() == 0) {
    dw.zero_();
    return dw;
  }
  if (dy.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::conv2d_backward_weight(dy, x, dw, p);
    return dw;
#else
    detail::no_cuda("conv2d_backward_weight", dy);
#endif
  }
  if (dy.dtype() == DType::Float32) {
    backward_weight_cpu(dy, x, dw, d);
  } else {
    via_float32(dw, {dy, x}, [&](const std::vector<Tensor>& in, const Tensor& out) {
      backward_weight_cpu(in[0], in[1], out, d);
    });
  }
  return dw;
}

Tensor conv2d_backward_bias(const Tensor& dy) {
  GTL_CHECK(dy.defined() && dy.dim() == 4,
            "conv2d_backward_bias: expected dy [N, K, P, Q], got "
                << (dy.defined() ? shape_str(dy.shape()) : std::string("an undefined tensor")));
  check_float_operands("conv2d_backward_bias", {&dy});
  const int64_t n = dy.size(0), k = dy.size(1), pq = dy.size(2) * dy.size(3);
  Tensor db = Tensor::empty({k}, dy.dtype(), dy.device());
  if (k == 0) return db;
  if (dy.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::conv2d_backward_bias(dy, db);
    return db;
#else
    detail::no_cuda("conv2d_backward_bias", dy);
#endif
  }
  const Tensor dy32 = dy.dtype() == DType::Float32 ? dy : dy.to(DType::Float32);
  Tensor db32 = Tensor::zeros({k});
  const float* g = dy32.data<float>();
  float* out = db32.data<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < k; ++c)
      for (int64_t j = 0; j < pq; ++j) out[c] += g[(i * k + c) * pq + j];
  db.copy_(db32.dtype() == db.dtype() ? db32 : db32.to(db.dtype()));
  return db;
}

}  // namespace gtl::ops
