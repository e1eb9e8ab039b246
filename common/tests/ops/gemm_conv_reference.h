// Direct-loop references for the GEMM, convolution and pooling tests, in double precision, and
// the shapes those tests share.
// Slow and obviously correct: each is the formula of the op's header, written as loops.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gtl/ops/conv2d.h"
#include "gtl/ops/pool2d.h"
#include "gtl/tensor/tensor.h"

namespace gtl::testing {

// The GEMM shapes every matmul test covers: 1x1x1, odd sizes, and K = 1.
struct Mkn {
  int64_t m, k, n;
};
inline const Mkn kShapes[] = {{1, 1, 1}, {3, 5, 7}, {17, 33, 65}, {128, 1, 64}};

// Stored shapes of a and b such that op(a) is [m, k] and op(b) is [k, n].
inline Shape a_shape(const Mkn& s, bool ta) {
  return ta ? Shape{s.k, s.m} : Shape{s.m, s.k};
}
inline Shape b_shape(const Mkn& s, bool tb) {
  return tb ? Shape{s.n, s.k} : Shape{s.k, s.n};
}

// One convolution case: input and filter shapes and the stride and padding, printable.
struct ConvCase {
  Shape x, w;
  ops::Conv2dParams p;
  std::string str() const {
    return "x " + shape_str(x) + " w " + shape_str(w) + " stride (" + std::to_string(p.stride_h) +
           ", " + std::to_string(p.stride_w) + ") pad (" + std::to_string(p.pad_h) + ", " +
           std::to_string(p.pad_w) + ")";
  }
};

// op(a) op(b) for row-major a, b; ta/tb transpose. Returns an [m, n] float32 CPU tensor.
inline Tensor reference_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const std::vector<float> av = a.to_vector(), bv = b.to_vector();
  const int64_t m = ta ? a.size(1) : a.size(0), k = ta ? a.size(0) : a.size(1);
  const int64_t n = tb ? b.size(0) : b.size(1);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t l = 0; l < k; ++l) {
        const double x = av[static_cast<std::size_t>(ta ? l * a.size(1) + i : i * a.size(1) + l)];
        const double y = bv[static_cast<std::size_t>(tb ? j * b.size(1) + l : l * b.size(1) + j)];
        sum += x * y;
      }
      c[static_cast<std::size_t>(i * n + j)] = static_cast<float>(sum);
    }
  return Tensor::from_vector(c, {m, n});
}

// The convolution's formula (see conv2d.h); bias may be undefined.
inline Tensor reference_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias,
                               const ops::Conv2dParams& p) {
  const Shape ys = ops::conv2d_output_shape(x.shape(), w.shape(), p);
  const std::vector<float> xv = x.to_vector(), wv = w.to_vector();
  const std::vector<float> bv = bias.defined() ? bias.to_vector() : std::vector<float>();
  const int64_t C = x.size(1), H = x.size(2), W = x.size(3), R = w.size(2), S = w.size(3);
  std::vector<float> y(static_cast<std::size_t>(shape_numel(ys)));
  for (int64_t n = 0; n < ys[0]; ++n)
    for (int64_t k = 0; k < ys[1]; ++k)
      for (int64_t oh = 0; oh < ys[2]; ++oh)
        for (int64_t ow = 0; ow < ys[3]; ++ow) {
          double sum = bias.defined() ? bv[static_cast<std::size_t>(k)] : 0.0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t s = 0; s < S; ++s) {
                const int64_t ih = oh * p.stride_h - p.pad_h + r;
                const int64_t iw = ow * p.stride_w - p.pad_w + s;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                sum += static_cast<double>(
                           xv[static_cast<std::size_t>(((n * C + c) * H + ih) * W + iw)]) *
                       wv[static_cast<std::size_t>(((k * C + c) * R + r) * S + s)];
              }
          y[static_cast<std::size_t>(((n * ys[1] + k) * ys[2] + oh) * ys[3] + ow)] =
              static_cast<float>(sum);
        }
  return Tensor::from_vector(y, ys);
}

// Max (max = true) or average pooling by the formula of pool2d.h.
inline Tensor reference_pool2d(const Tensor& x, const ops::Pool2dParams& p, bool max) {
  const Shape ys = ops::pool2d_output_shape(x.shape(), p);
  const std::vector<float> xv = x.to_vector();
  const int64_t H = x.size(2), W = x.size(3);
  std::vector<float> y(static_cast<std::size_t>(shape_numel(ys)));
  for (int64_t plane = 0; plane < ys[0] * ys[1]; ++plane)
    for (int64_t oh = 0; oh < ys[2]; ++oh)
      for (int64_t ow = 0; ow < ys[3]; ++ow) {
        double acc = max ? -INFINITY : 0.0;
        for (int64_t i = 0; i < p.kernel_h; ++i)
          for (int64_t j = 0; j < p.kernel_w; ++j) {
            const double v = xv[static_cast<std::size_t>((plane * H + oh * p.stride_h + i) * W +
                                                         ow * p.stride_w + j)];
            acc = max ? std::fmax(acc, v) : acc + v;
          }
        if (!max) acc /= static_cast<double>(p.kernel_h * p.kernel_w);
        y[static_cast<std::size_t>((plane * ys[2] + oh) * ys[3] + ow)] = static_cast<float>(acc);
      }
  return Tensor::from_vector(y, ys);
}

// sum_i a[i] * b[i] in double: the scalar loss L = <y, g> whose gradient dL/dy is g.
inline double dot(const Tensor& a, const Tensor& b) {
  const std::vector<float> av = a.to_vector(), bv = b.to_vector();
  double s = 0.0;
  for (std::size_t i = 0; i < av.size(); ++i) s += static_cast<double>(av[i]) * bv[i];
  return s;
}

// dL/dv[i] for L = <forward(v), g>, by central differences of step h through the op's own
// forward pass. h is large enough that float32 rounding does not swamp the difference.
template <typename Forward>
Tensor finite_difference(const Tensor& v, const Tensor& g, float h, Forward forward) {
  std::vector<float> values = v.to_vector(), grad(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float keep = values[i];
    values[i] = keep + h;
    const double up = dot(forward(Tensor::from_vector(values, v.shape())), g);
    values[i] = keep - h;
    const double down = dot(forward(Tensor::from_vector(values, v.shape())), g);
    values[i] = keep;
    grad[i] = static_cast<float>((up - down) / (2.0 * h));
  }
  return Tensor::from_vector(grad, v.shape());
}

// Small integers in [-range, range] (as floats): products and sums of them are exact in float32.
inline Tensor small_integers(const Shape& shape, Generator& gen, int range,
                             DType dtype = DType::Float32) {
  std::vector<float> v = Tensor::uniform(shape, gen, -range - 0.5f, range + 0.5f).to_vector();
  for (float& x : v) x = std::round(x);
  return Tensor::from_vector(v, shape, dtype);
}

}  // namespace gtl::testing
