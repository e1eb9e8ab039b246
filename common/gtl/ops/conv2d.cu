// The cuDNN path of the conv2d ops, plus two small kernels (bias add, bias gradient).
//
// cuDNN's legacy convolution API (still in cuDNN 9) in four steps per call:
//   1. describe the tensors (NCHW), the filter and the convolution (padding, stride, math type);
//   2. choose an algorithm: implicit GEMM, precomputed-index GEMM, FFT, Winograd, ... Each is
//      correct; their speed depends on the shape and the GPU. By default cuDNN's heuristic picks
//      one without running anything (cudnnGet*_v7). In benchmark mode (math_mode.h) cuDNN runs
//      every algorithm once on the real buffers and we keep the fastest (cudnnFind*Ex). Either
//      choice is cached, keyed by everything that can change it: pass, device, dtype, shapes,
//      stride, padding, TF32 and the mode itself;
//   3. borrow the algorithm's scratch memory (workspace) from the current allocator as a uint8
//      tensor on the device, so it shows in the allocator's statistics and is reused;
//   4. run it on current_stream() through a handle owned by this (device, stream, thread).
//
// Precision: every convolution computes in float32 (CUDNN_DATA_FLOAT). For float32 data the
// math type is CUDNN_FMA_MATH (no TF32) unless ops::tf32_enabled(); 16-bit data may use the
// tensor cores. Algorithms the heuristic or the measurement offer with another math type are
// skipped, so a TF32-off convolution never silently runs in TF32.
//
// A CUDA build without cuDNN compiles this file too: the convolutions then throw an error that
// says so; the bias gradient, a plain kernel, still works.
#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

#include "gtl/ops/detail/conv2d_cuda.h"
#include "gtl/ops/math_mode.h"
#include "gtl/runtime/cuda_check.h"
#include "gtl/runtime/launch.h"
#include "gtl/tensor/dispatch.h"

namespace gtl::ops::cuda {

namespace {

constexpr int kThreads = launch::kThreadsPerBlock;

// y[n, k, :, :] += b[k]
template <typename T>
__global__ void add_bias(T* y, const T* b, int64_t channels, int64_t plane, int64_t total) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= total) return;
  const int64_t k = (i / plane) % channels;
  y[i] = convert<T>(static_cast<float>(y[i]) + static_cast<float>(b[k]));
}

// db[k] = sum over n, p, q of dy[n, k, p, q]: one block per channel, a shared-memory tree sum.
template <typename T>
__global__ void bias_grad(const T* dy, T* db, int64_t batch, int64_t channels, int64_t plane) {
  __shared__ float partial[kThreads];
  const int64_t k = blockIdx.x;
  float sum = 0.f;
  for (int64_t i = threadIdx.x; i < batch * plane; i += blockDim.x) {
    const int64_t n = i / plane, j = i % plane;
    sum += static_cast<float>(dy[(n * channels + k) * plane + j]);
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (static_cast<int>(threadIdx.x) < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[k] = convert<T>(partial[0]);
}

#ifdef GTL_HAVE_CUDNN

cudnnHandle_t handle_for(Device device, cudaStream_t stream) {
  // One handle per (device, stream) per thread, alive for the whole program: see matmul.cu.
  thread_local std::map<std::pair<int, cudaStream_t>, cudnnHandle_t> handles;
  const std::pair<int, cudaStream_t> key{device.index(), stream};
  if (auto it = handles.find(key); it != handles.end()) return it->second;
  // Cached only once fully configured: a handle left on another stream would race.
  cudnnHandle_t handle = nullptr;
  GTL_CUDNN_CHECK(cudnnCreate(&handle));
  try {
    GTL_CUDNN_CHECK(cudnnSetStream(handle, stream));
    handles.emplace(key, handle);
  } catch (...) {
    (void)cudnnDestroy(handle);
    throw;
  }
  return handle;
}

cudnnDataType_t cudnn_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return CUDNN_DATA_FLOAT;
    case DType::Float16:
      return CUDNN_DATA_HALF;
    case DType::BFloat16:
      return CUDNN_DATA_BFLOAT16;
    default:
      break;
  }
  throw Error(std::string("conv2d: no cuDNN type for ") + dtype_name(dtype));
}

// One cuDNN descriptor, destroyed with its owner. As members of Descriptors they make a
// constructor that throws halfway destroy the descriptors it had already created.
template <typename Handle, cudnnStatus_t (*Create)(Handle*), cudnnStatus_t (*Destroy)(Handle)>
class Owned {
 public:
  Owned() { GTL_CUDNN_CHECK(Create(&handle_)); }
  ~Owned() { (void)Destroy(handle_); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  operator Handle() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};

using TensorDescriptor =
    Owned<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    Owned<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor = Owned<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
                                    cudnnDestroyConvolutionDescriptor>;

// Step 1: the descriptors of one convolution x [N,C,H,W] * w [K,C,R,S] -> y [N,K,P,Q].
struct Descriptors {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  bool fp32_no_tf32 = false;  // float32 data with TF32 off: only FMA math is acceptable

  Descriptors(const Shape& xs, const Shape& ws, const Shape& ys, DType dtype,
              const Conv2dParams& p) {
    const auto i = [](int64_t v) { return static_cast<int>(v); };
    const cudnnDataType_t type = cudnn_dtype(dtype);
    GTL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, type, i(xs[0]), i(xs[1]),
                                               i(xs[2]), i(xs[3])));
    GTL_CUDNN_CHECK(cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, type, i(ys[0]), i(ys[1]),
                                               i(ys[2]), i(ys[3])));
    GTL_CUDNN_CHECK(cudnnSetFilter4dDescriptor(w, type, CUDNN_TENSOR_NCHW, i(ws[0]), i(ws[1]),
                                               i(ws[2]), i(ws[3])));
    GTL_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv, i(p.pad_h), i(p.pad_w), i(p.stride_h),
                                                    i(p.stride_w), 1, 1, CUDNN_CROSS_CORRELATION,
                                                    CUDNN_DATA_FLOAT));
    fp32_no_tf32 = dtype == DType::Float32 && !tf32_enabled();
    GTL_CUDNN_CHECK(cudnnSetConvolutionMathType(
        conv, fp32_no_tf32
                  ? CUDNN_FMA_MATH
                  : (dtype == DType::Float32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH)));
  }
};

// Step 2: an algorithm with the math type it was chosen for and the workspace it needs.
struct Algo {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t workspace = 0;
};

enum class Pass { Forward, BackwardData, BackwardFilter };

// Benchmark mode measures only algorithms whose workspace fits in this much memory.
constexpr std::size_t kMaxBenchmarkWorkspace = std::size_t{512} << 20;

std::string cache_key(Pass pass, const Tensor& x_like, const Shape& xs, const Shape& ws,
                      const Conv2dParams& p) {
  std::ostringstream key;
  key << static_cast<int>(pass) << ' ' << x_like.device() << ' ' << dtype_name(x_like.dtype())
      << ' ' << shape_str(xs) << ' ' << shape_str(ws) << ' ' << p.stride_h << ' ' << p.stride_w
      << ' ' << p.pad_h << ' ' << p.pad_w << " tf32=" << tf32_enabled()
      << " benchmark=" << cudnn_benchmark_enabled();
  return key.str();
}

Tensor workspace(std::size_t bytes, Device device) {
  return Tensor::empty({static_cast<int64_t>(std::max<std::size_t>(bytes, 1))}, DType::UInt8,
                       device);
}

// The first result, in cuDNN's order (fastest measured, or best guess), that succeeded, has an
// acceptable math type and whose workspace size can be queried.
template <typename Perf, typename WorkspaceSize>
Algo pick(const char* op, const Perf* perfs, int count, const Descriptors& d,
          WorkspaceSize workspace_size) {
  for (int i = 0; i < count; ++i) {
    const Perf& perf = perfs[i];
    if (perf.status != CUDNN_STATUS_SUCCESS) continue;
    if (d.fp32_no_tf32 && perf.mathType != CUDNN_FMA_MATH) continue;
    GTL_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, perf.mathType));
    std::size_t bytes = 0;
    if (workspace_size(static_cast<int>(perf.algo), &bytes) != CUDNN_STATUS_SUCCESS) continue;
    return Algo{static_cast<int>(perf.algo), perf.mathType, bytes};
  }
  throw Error(std::string(op) + ": cuDNN offered no usable algorithm for this convolution" +
              (d.fp32_no_tf32 ? " without TF32 (try ops::ScopedTF32 tf32(true))" : ""));
}

// Step 2 for any pass: cached, else by heuristic or measurement. `find` runs cudnnFind*Ex on the
// real buffers with a workspace; `heuristic` runs cudnnGet*_v7; both fill perfs and count.
template <typename Perf, int kCount, typename Heuristic, typename Find, typename WorkspaceSize>
Algo choose(const char* op, const std::string& key, Device device, const Descriptors& d,
            Heuristic heuristic, Find find, WorkspaceSize workspace_size) {
  static std::mutex mutex;
  static std::map<std::string, Algo> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  Perf perfs[kCount];
  int count = 0;
  if (cudnn_benchmark_enabled()) {
    std::size_t most = 0;
    for (int a = 0; a < kCount; ++a) {
      std::size_t bytes = 0;
      if (workspace_size(a, &bytes) == CUDNN_STATUS_SUCCESS && bytes <= kMaxBenchmarkWorkspace)
        most = std::max(most, bytes);
    }
    Tensor scratch = workspace(most, device);
    GTL_CUDNN_CHECK(find(kCount, &count, perfs, scratch.data_ptr(), most));
  } else {
    GTL_CUDNN_CHECK(heuristic(kCount, &count, perfs));
  }
  const Algo algo = pick(op, perfs, count, d, workspace_size);
  std::lock_guard<std::mutex> lock(mutex);
  cache.emplace(key, algo);
  return algo;
}

#endif  // GTL_HAVE_CUDNN

#ifndef GTL_HAVE_CUDNN
[[noreturn]] void no_cudnn(const char* op) {
  throw Error(std::string(op) +
              " on the GPU needs cuDNN, and this build has none "
              "(cudnn.h / libcudnn were not found at configure time); run it on the CPU");
}
#endif

}  // namespace

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    const Conv2dParams& p) {
#ifdef GTL_HAVE_CUDNN
  DeviceGuard guard(x.device());
  cudnnHandle_t h = handle_for(x.device(), current_stream().handle());
  Descriptors d(x.shape(), w.shape(), y.shape(), x.dtype(), p);
  const auto workspace_size = [&](int a, std::size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(
        h, d.x, d.w, d.conv, d.y, static_cast<cudnnConvolutionFwdAlgo_t>(a), bytes);
  };
  const Algo algo = choose<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
      "conv2d_forward", cache_key(Pass::Forward, x, x.shape(), w.shape(), p), x.device(), d,
      [&](int n, int* count, cudnnConvolutionFwdAlgoPerf_t* perfs) {
        return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x, d.w, d.conv, d.y, n, count, perfs);
      },
      [&](int n, int* count, cudnnConvolutionFwdAlgoPerf_t* perfs, void* ws, std::size_t bytes) {
        return cudnnFindConvolutionForwardAlgorithmEx(h, d.x, x.data_ptr(), d.w, w.data_ptr(),
                                                      d.conv, d.y, y.data_ptr(), n, count, perfs,
                                                      ws, bytes);
      },
      workspace_size);
  GTL_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, algo.math));
  Tensor scratch = workspace(algo.workspace, x.device());
  const float one = 1.f, zero = 0.f;
  GTL_CUDNN_CHECK(cudnnConvolutionForward(h, &one, d.x, x.data_ptr(), d.w, w.data_ptr(), d.conv,
                                          static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo),
                                          scratch.data_ptr(), algo.workspace, &zero, d.y,
                                          y.data_ptr()));
  detail::count_library_launch();
  if (bias.defined()) {
    const int64_t total = y.numel(), plane = y.size(2) * y.size(3);
    const unsigned blocks = launch::blocks_to_cover(total, kThreads);
    GTL_DISPATCH_FLOATING(y.dtype(), T, {
      add_bias<T><<<blocks, kThreads, 0, current_stream().handle()>>>(y.data<T>(), bias.data<T>(),
                                                                      y.size(1), plane, total);
    });
    GTL_CUDA_CHECK_LAUNCH();
  }
#else
  no_cudnn("conv2d_forward");
#endif
}

void conv2d_backward_data(const Tensor& dy, const Tensor& w, const Tensor& dx,
                          const Conv2dParams& p) {
#ifdef GTL_HAVE_CUDNN
  DeviceGuard guard(dy.device());
  cudnnHandle_t h = handle_for(dy.device(), current_stream().handle());
  Descriptors d(dx.shape(), w.shape(), dy.shape(), dy.dtype(), p);
  const auto workspace_size = [&](int a, std::size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(
        h, d.w, d.y, d.conv, d.x, static_cast<cudnnConvolutionBwdDataAlgo_t>(a), bytes);
  };
  const Algo algo =
      choose<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          "conv2d_backward_data", cache_key(Pass::BackwardData, dy, dx.shape(), w.shape(), p),
          dy.device(), d,
          [&](int n, int* count, cudnnConvolutionBwdDataAlgoPerf_t* perfs) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y, d.conv, d.x, n, count,
                                                               perfs);
          },
          [&](int n, int* count, cudnnConvolutionBwdDataAlgoPerf_t* perfs, void* ws,
              std::size_t bytes) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(
                h, d.w, w.data_ptr(), d.y, dy.data_ptr(), d.conv, d.x, dx.data_ptr(), n, count,
                perfs, ws, bytes);
          },
          workspace_size);
  GTL_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, algo.math));
  Tensor scratch = workspace(algo.workspace, dy.device());
  const float one = 1.f, zero = 0.f;
  GTL_CUDNN_CHECK(
      cudnnConvolutionBackwardData(h, &one, d.w, w.data_ptr(), d.y, dy.data_ptr(), d.conv,
                                   static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo),
                                   scratch.data_ptr(), algo.workspace, &zero, d.x, dx.data_ptr()));
  detail::count_library_launch();
#else
  no_cudnn("conv2d_backward_data");
#endif
}

void conv2d_backward_weight(const Tensor& dy, const Tensor& x, const Tensor& dw,
                            const Conv2dParams& p) {
#ifdef GTL_HAVE_CUDNN
  DeviceGuard guard(dy.device());
  cudnnHandle_t h = handle_for(dy.device(), current_stream().handle());
  Descriptors d(x.shape(), dw.shape(), dy.shape(), dy.dtype(), p);
  const auto workspace_size = [&](int a, std::size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, d.x, d.y, d.conv, d.w, static_cast<cudnnConvolutionBwdFilterAlgo_t>(a), bytes);
  };
  const Algo algo =
      choose<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          "conv2d_backward_weight", cache_key(Pass::BackwardFilter, dy, x.shape(), dw.shape(), p),
          dy.device(), d,
          [&](int n, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* perfs) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x, d.y, d.conv, d.w, n, count,
                                                                 perfs);
          },
          [&](int n, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* perfs, void* ws,
              std::size_t bytes) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                h, d.x, x.data_ptr(), d.y, dy.data_ptr(), d.conv, d.w, dw.data_ptr(), n, count,
                perfs, ws, bytes);
          },
          workspace_size);
  GTL_CUDNN_CHECK(cudnnSetConvolutionMathType(d.conv, algo.math));
  Tensor scratch = workspace(algo.workspace, dy.device());
  const float one = 1.f, zero = 0.f;
  GTL_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
      h, &one, d.x, x.data_ptr(), d.y, dy.data_ptr(), d.conv,
      static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo.algo), scratch.data_ptr(), algo.workspace,
      &zero, d.w, dw.data_ptr()));
  detail::count_library_launch();
#else
  no_cudnn("conv2d_backward_weight");
#endif
}

void conv2d_backward_bias(const Tensor& dy, const Tensor& db) {
  DeviceGuard guard(dy.device());
  const int64_t batch = dy.size(0), channels = dy.size(1), plane = dy.size(2) * dy.size(3);
  GTL_DISPATCH_FLOATING(dy.dtype(), T, {
    bias_grad<T><<<static_cast<unsigned>(channels), kThreads, 0, current_stream().handle()>>>(
        dy.data<T>(), db.data<T>(), batch, channels, plane);
  });
  GTL_CUDA_CHECK_LAUNCH();
}

}  // namespace gtl::ops::cuda
