// CUDA kernels of the pool2d ops: one thread per output element forward, one thread per input
// element backward.
//
// Why the backward kernels gather instead of scatter: with overlapping windows several outputs
// send gradient to the same input. Scattering (a thread per output doing atomicAdd into dx) is
// simple but adds in a different order on every run, and atomicAdd on 16-bit floats is slow or
// unavailable. Gathering (a thread per input summing the outputs whose window holds it) writes
// each dx element exactly once, in a fixed order: the same order as the CPU loop. Max pooling's
// gradient then agrees with the CPU bit for bit in float32; average pooling's agrees to rounding,
// since nvcc fuses its dy * scale and the add into one FMA where the CPU rounds both.
#include <cstdint>

#include "gtl/ops/detail/pool2d_cuda.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

struct Dims {
  int64_t planes, h, w, p, q, kh, kw, sh, sw;
};

Dims dims_of(const Shape& x, const Shape& y, const Pool2dParams& prm) {
  return {x[0] * x[1],  x[2],         x[3],         y[2],        y[3],
          prm.kernel_h, prm.kernel_w, prm.stride_h, prm.stride_w};
}

using launch::blocks_to_cover;
using launch::kThreadsPerBlock;

// The outputs whose window holds input row ih: oh in [first, last] with
// oh * stride <= ih < oh * stride + kernel.
__device__ inline void covering(int64_t i, int64_t kernel, int64_t stride, int64_t outs,
                                int64_t& first, int64_t& last) {
  first = i < kernel ? 0 : (i - kernel) / stride + 1;
  last = min(i / stride, outs - 1);
}

template <typename T>
__global__ void max_forward(const T* x, T* y, int64_t* indices, Dims d) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= d.planes * d.p * d.q) return;
  const int64_t ow = o % d.q, oh = (o / d.q) % d.p, plane = o / (d.p * d.q);
  const T* in = x + plane * d.h * d.w;
  int64_t best_i = oh * d.sh * d.w + ow * d.sw;
  float best = static_cast<float>(in[best_i]);
  for (int64_t kh = 0; kh < d.kh; ++kh)
    for (int64_t kw = 0; kw < d.kw; ++kw) {
      const int64_t i = (oh * d.sh + kh) * d.w + ow * d.sw + kw;
      const float v = static_cast<float>(in[i]);
      if (v > best || (v != v && best == best)) {  // strictly greater, or the first NaN
        best = v;
        best_i = i;
      }
    }
  y[o] = in[best_i];  // the winning element itself: no rounding
  indices[o] = best_i;
}

template <typename T>
__global__ void max_backward(const T* dy, const int64_t* indices, T* dx, Dims d) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= d.planes * d.h * d.w) return;
  const int64_t iw = i % d.w, ih = (i / d.w) % d.h, plane = i / (d.h * d.w);
  const int64_t self = ih * d.w + iw;
  int64_t p0, p1, q0, q1;
  covering(ih, d.kh, d.sh, d.p, p0, p1);
  covering(iw, d.kw, d.sw, d.q, q0, q1);
  float sum = 0.f;
  for (int64_t oh = p0; oh <= p1; ++oh)
    for (int64_t ow = q0; ow <= q1; ++ow) {
      const int64_t o = (plane * d.p + oh) * d.q + ow;
      if (indices[o] == self) sum += static_cast<float>(dy[o]);
    }
  dx[i] = convert<T>(sum);
}

template <typename T>
__global__ void avg_forward(const T* x, T* y, Dims d) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= d.planes * d.p * d.q) return;
  const int64_t ow = o % d.q, oh = (o / d.q) % d.p, plane = o / (d.p * d.q);
  float sum = 0.f;
  for (int64_t kh = 0; kh < d.kh; ++kh)
    for (int64_t kw = 0; kw < d.kw; ++kw)
      sum += static_cast<float>(x[(plane * d.h + oh * d.sh + kh) * d.w + ow * d.sw + kw]);
  y[o] = convert<T>(sum * (1.f / static_cast<float>(d.kh * d.kw)));
}

template <typename T>
__global__ void avg_backward(const T* dy, T* dx, Dims d) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= d.planes * d.h * d.w) return;
  const int64_t iw = i % d.w, ih = (i / d.w) % d.h, plane = i / (d.h * d.w);
  int64_t p0, p1, q0, q1;
  covering(ih, d.kh, d.sh, d.p, p0, p1);
  covering(iw, d.kw, d.sw, d.q, q0, q1);
  const float scale = 1.f / static_cast<float>(d.kh * d.kw);
  float sum = 0.f;
  for (int64_t oh = p0; oh <= p1; ++oh)
    for (int64_t ow = q0; ow <= q1; ++ow)
      sum += static_cast<float>(dy[(plane * d.p + oh) * d.q + ow]) * scale;
  dx[i] = convert<T>(sum);
}

}  // namespace

void max_pool2d_forward(const Tensor& x, const Tensor& y, const Tensor& indices,
                        const Pool2dParams& p) {
  DeviceGuard guard(x.device());
  const Dims d = dims_of(x.shape(), y.shape(), p);
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_FLOATING(x.dtype(), T, {
    max_forward<T><<<blocks_to_cover(y.numel()), kThreadsPerBlock, 0, stream>>>(
        x.data<T>(), y.data<T>(), indices.data<int64_t>(), d);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void max_pool2d_backward(const Tensor& dy, const Tensor& indices, const Tensor& dx,
                         const Pool2dParams& p) {
  DeviceGuard guard(dy.device());
  const Dims d = dims_of(dx.shape(), dy.shape(), p);
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_FLOATING(dy.dtype(), T, {
    max_backward<T><<<blocks_to_cover(dx.numel()), kThreadsPerBlock, 0, stream>>>(
        dy.data<T>(), indices.data<int64_t>(), dx.data<T>(), d);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void avg_pool2d_forward(const Tensor& x, const Tensor& y, const Pool2dParams& p) {
  DeviceGuard guard(x.device());
  const Dims d = dims_of(x.shape(), y.shape(), p);
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_FLOATING(x.dtype(), T, {
    avg_forward<T>
        <<<blocks_to_cover(y.numel()), kThreadsPerBlock, 0, stream>>>(x.data<T>(), y.data<T>(), d);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

void avg_pool2d_backward(const Tensor& dy, const Tensor& dx, const Pool2dParams& p) {
  DeviceGuard guard(dy.device());
  const Dims d = dims_of(dx.shape(), dy.shape(), p);
  cudaStream_t stream = current_stream().handle();
  GTL_DISPATCH_FLOATING(dy.dtype(), T, {
    avg_backward<T><<<blocks_to_cover(dx.numel()), kThreadsPerBlock, 0, stream>>>(dy.data<T>(),
                                                                                  dx.data<T>(), d);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
