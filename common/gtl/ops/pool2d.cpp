// ops::*_pool2d_*: checks at the door, then plain CPU loops or the CUDA kernels (pool2d.cu).
// The CPU loops compute in float32 (16-bit inputs are widened and the outputs rounded once).
#include "gtl/ops/pool2d.h"
#include "gtl/ops/detail/checks.h"

#ifdef GTL_WITH_CUDA
#include "gtl/ops/detail/pool2d_cuda.h"
#endif

namespace gtl::ops {

namespace {

struct PoolDims {
  int64_t planes, h, w, p, q, kh, kw, sh, sw;
};

PoolDims pool_dims(const Shape& x, const Pool2dParams& prm) {
  const Shape y = pool2d_output_shape(x, prm);
  return {x[0] * x[1],  x[2],         x[3],         y[2],        y[3],
          prm.kernel_h, prm.kernel_w, prm.stride_h, prm.stride_w};
}

void check_floating(const char* op, const Tensor& t) {
  GTL_CHECK(t.defined(), op << ": undefined tensor");
  GTL_CHECK(is_floating(t.dtype()),
            op << ": expected float32, float16 or bfloat16, got " << dtype_name(t.dtype()));
}

Tensor as_float32(const Tensor& t) {
  return t.dtype() == DType::Float32 ? t : t.to(DType::Float32);
}

// Stores a float32 CPU result into `out` (rounding once when out is 16-bit).
void store(Tensor out, const Tensor& result32) {
  out.copy_(out.dtype() == DType::Float32 ? result32 : result32.to(out.dtype()));
}

}  // namespace

Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p) {
  GTL_CHECK(x.size() == 4, "pool2d: expected x [N, C, H, W], got " << shape_str(x));
  GTL_CHECK(p.kernel_h > 0 && p.kernel_w > 0 && p.stride_h > 0 && p.stride_w > 0,
            "pool2d: kernel and stride must be positive, got kernel "
                << p.kernel_h << "x" << p.kernel_w << " stride " << p.stride_h << "x"
                << p.stride_w);
  GTL_CHECK(p.kernel_h <= x[2] && p.kernel_w <= x[3],
            "pool2d: window " << p.kernel_h << "x" << p.kernel_w << " larger than the input plane "
                              << x[2] << "x" << x[3] << " of x " << shape_str(x));
  return {x[0], x[1], (x[2] - p.kernel_h) / p.stride_h + 1, (x[3] - p.kernel_w) / p.stride_w + 1};
}

MaxPool2dResult max_pool2d_forward(const Tensor& x, const Pool2dParams& p) {
  check_floating("max_pool2d_forward", x);
  const PoolDims d = pool_dims(x.shape(), p);
  const Shape ys = pool2d_output_shape(x.shape(), p);
  MaxPool2dResult r{Tensor::empty(ys, x.dtype(), x.device()),
                    Tensor::empty(ys, DType::Int64, x.device())};
  if (r.output.numel() == 0) return r;
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::max_pool2d_forward(x, r.output, r.indices, p);
    return r;
#else
    detail::no_cuda("max_pool2d_forward", x);
#endif
  }
  const Tensor x32 = as_float32(x);
  Tensor y32 = Tensor::empty(ys);
  const float* xp = x32.data<float>();
  float* yp = y32.data<float>();
  int64_t* ip = r.indices.data<int64_t>();
  for (int64_t plane = 0; plane < d.planes; ++plane) {
    const float* in = xp + plane * d.h * d.w;
    for (int64_t oh = 0; oh < d.p; ++oh)
      for (int64_t ow = 0; ow < d.q; ++ow) {
        int64_t best_i = oh * d.sh * d.w + ow * d.sw;  // the window's first element
        float best = in[best_i];
        for (int64_t kh = 0; kh < d.kh; ++kh)
          for (int64_t kw = 0; kw < d.kw; ++kw) {
            const int64_t i = (oh * d.sh + kh) * d.w + ow * d.sw + kw;
            const float v = in[i];
            if (v > best || (v != v && best == best)) {  // strictly greater, or the first NaN
              best = v;
              best_i = i;
            }
          }
        const int64_t o = (plane * d.p + oh) * d.q + ow;
        yp[o] = best;
        ip[o] = best_i;
      }
  }
  store(r.output, y32);
  return r;
}

Tensor max_pool2d_backward(const Tensor& dy, const Tensor& indices, const Shape& x_shape,
                           const Pool2dParams& p) {
  check_floating("max_pool2d_backward", dy);
  const PoolDims d = pool_dims(x_shape, p);
  GTL_CHECK(indices.defined(), "max_pool2d_backward: indices undefined (pass the forward's)");
  check_same_device("max_pool2d_backward", {&dy, &indices});
  check_dtype("max_pool2d_backward (indices)", indices, DType::Int64);
  const Shape ys = pool2d_output_shape(x_shape, p);
  check_shape("max_pool2d_backward (dy = dL/dy has the forward output's shape)", dy, ys);
  check_shape("max_pool2d_backward (indices from the forward pass)", indices, ys);
  Tensor dx = Tensor::empty(x_shape, dy.dtype(), dy.device());
  if (dx.numel() == 0) return dx;
  if (dy.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::max_pool2d_backward(dy, indices, dx, p);
    return dx;
#else
    detail::no_cuda("max_pool2d_backward", dy);
#endif
  }
  const Tensor dy32 = as_float32(dy);
  Tensor dx32 = Tensor::zeros(x_shape);
  const float* g = dy32.data<float>();
  const int64_t* ip = indices.data<int64_t>();
  float* out = dx32.data<float>();
  for (int64_t plane = 0; plane < d.planes; ++plane)
    for (int64_t o = 0; o < d.p * d.q; ++o) {
      const int64_t i = ip[plane * d.p * d.q + o];
      GTL_CHECK(i >= 0 && i < d.h * d.w, "max_pool2d_backward: index " << i << " outside the "
                                                                       << d.h << "x" << d.w
                                                                       << " input plane");
      out[plane * d.h * d.w + i] += g[plane * d.p * d.q + o];
    }
  store(dx, dx32);
  return dx;
}

Tensor avg_pool2d_forward(const Tensor& x, const Pool2dParams& p) {
  check_floating("avg_pool2d_forward", x);
  const PoolDims d = pool_dims(x.shape(), p);
  Tensor y = Tensor::empty(pool2d_output_shape(x.shape(), p), x.dtype(), x.device());
  if (y.numel() == 0) return y;
  if (x.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::avg_pool2d_forward(x, y, p);
    return y;
#else
    detail::no_cuda("avg_pool2d_forward", x);
#endif
  }
  const Tensor x32 = as_float32(x);
  Tensor y32 = Tensor::empty(y.shape());
  const float* xp = x32.data<float>();
  float* yp = y32.data<float>();
  const float scale = 1.f / static_cast<float>(d.kh * d.kw);
  for (int64_t plane = 0; plane < d.planes; ++plane)
    for (int64_t oh = 0; oh < d.p; ++oh)
      for (int64_t ow = 0; ow < d.q; ++ow) {
        float sum = 0.f;
        for (int64_t kh = 0; kh < d.kh; ++kh)
          for (int64_t kw = 0; kw < d.kw; ++kw)
            sum += xp[(plane * d.h + oh * d.sh + kh) * d.w + ow * d.sw + kw];
        yp[(plane * d.p + oh) * d.q + ow] = sum * scale;
      }
  store(y, y32);
  return y;
}

Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dParams& p) {
  check_floating("avg_pool2d_backward", dy);
  const PoolDims d = pool_dims(x_shape, p);
  check_shape("avg_pool2d_backward (dy = dL/dy has the forward output's shape)", dy,
              pool2d_output_shape(x_shape, p));
  Tensor dx = Tensor::empty(x_shape, dy.dtype(), dy.device());
  if (dx.numel() == 0) return dx;
  if (dy.is_cuda()) {
#ifdef GTL_WITH_CUDA
    cuda::avg_pool2d_backward(dy, dx, p);
    return dx;
#else
    detail::no_cuda("avg_pool2d_backward", dy);
#endif
  }
  const Tensor dy32 = as_float32(dy);
  Tensor dx32 = Tensor::zeros(x_shape);
  const float* g = dy32.data<float>();
  float* out = dx32.data<float>();
  const float scale = 1.f / static_cast<float>(d.kh * d.kw);
  for (int64_t plane = 0; plane < d.planes; ++plane)
    for (int64_t oh = 0; oh < d.p; ++oh)
      for (int64_t ow = 0; ow < d.q; ++ow) {
        const float share = g[(plane * d.p + oh) * d.q + ow] * scale;
        for (int64_t kh = 0; kh < d.kh; ++kh)
          for (int64_t kw = 0; kw < d.kw; ++kw)
            out[(plane * d.h + oh * d.sh + kh) * d.w + ow * d.sw + kw] += share;
      }
  store(dx, dx32);
  return dx;
}

}  // namespace gtl::ops
