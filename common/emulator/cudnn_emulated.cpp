// cuDNN's convolutions on the CPU: see cudnn_emulated.h for what is emulated and what is not.
#include "cudnn_emulated.h"

#include <cstdint>
#include <cstring>

#include "library_handles_emulated.h"
#include "library_types_emulated.h"

struct cudnnContext {
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;
};
struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int k = 0, c = 0, r = 0, s = 0;
};
struct cudnnConvolutionStruct {
  bool set = false;
  int pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

namespace {

constexpr size_t kWorkspacePerAlgo = 256;  // algorithm a needs a * 256 bytes (made up, fixed)

// cuDNN's statuses for a missing handle and a missing pointer: both are bad parameters.
constexpr emu::HandleStatuses<cudnnStatus_t> kStatuses = {
    CUDNN_STATUS_SUCCESS, CUDNN_STATUS_BAD_PARAM, CUDNN_STATUS_BAD_PARAM};

bool known_type(cudnnDataType_t t) {
  return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_HALF || t == CUDNN_DATA_BFLOAT16;
}

cudaDataType_t element_type(cudnnDataType_t t) {
  return t == CUDNN_DATA_HALF ? CUDA_R_16F : t == CUDNN_DATA_BFLOAT16 ? CUDA_R_16BF : CUDA_R_32F;
}

// The geometry of one convolution, checked: x [N,C,H,W] * w [K,C,R,S] -> y [N,K,P,Q].
struct Geometry {
  int n, c, h, w, k, r, s, p, q;
  int pad_h, pad_w, u, v, dil_h, dil_w;
  bool flip;  // CUDNN_CONVOLUTION: the filter is applied rotated by 180 degrees
  bool tf32;
  cudaDataType_t type;

  // Index of the input pixel that filter tap (rr, ss) of output (pp, qq) reads, or -1 (padding).
  int in_row(int pp, int rr) const { return pp * u - pad_h + (flip ? r - 1 - rr : rr) * dil_h; }
  int in_col(int qq, int ss) const { return qq * v - pad_w + (flip ? s - 1 - ss : ss) * dil_w; }
  int64_t x_at(int nn, int cc, int hh, int ww) const {
    return ((int64_t{nn} * c + cc) * h + hh) * w + ww;
  }
  int64_t w_at(int kk, int cc, int rr, int ss) const {
    return ((int64_t{kk} * c + cc) * r + rr) * s + ss;
  }
  int64_t y_at(int nn, int kk, int pp, int qq) const {
    return ((int64_t{nn} * k + kk) * p + pp) * q + qq;
  }
  float in(float value) const { return tf32 ? emu::to_tf32(value) : value; }
};

int output_size(int in, int pad, int filter, int stride, int dilation) {
  return 1 + (in + 2 * pad - ((filter - 1) * dilation + 1)) / stride;
}

// The descriptors of one convolution, named as in the forward pass: x * w -> y. The backward
// calls pass theirs in these roles (dx as x, dy as y, dw as w).
struct Convolution {
  const cudnnTensorStruct* x;
  const cudnnFilterStruct* w;
  const cudnnConvolutionStruct* conv;
  const cudnnTensorStruct* y;
};

// What every convolution call checks first: a handle, and descriptors, all set, that describe one
// convolution (same data type, matching channels, y of the size the convolution gives).
cudnnStatus_t geometry(cudnnHandle_t handle, const Convolution& d, Geometry* g) {
  const cudnnTensorStruct *x = d.x, *y = d.y;
  const cudnnFilterStruct* w = d.w;
  const cudnnConvolutionStruct* conv = d.conv;
  if (handle == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (!x || !w || !conv || !y || !x->set || !w->set || !conv->set || !y->set)
    return CUDNN_STATUS_BAD_PARAM;
  if (x->type != w->type || x->type != y->type) return CUDNN_STATUS_BAD_PARAM;
  if (x->c != w->c || y->n != x->n || y->c != w->k) return CUDNN_STATUS_BAD_PARAM;
  const int p = output_size(x->h, conv->pad_h, w->r, conv->u, conv->dil_h);
  const int q = output_size(x->w, conv->pad_w, w->s, conv->v, conv->dil_w);
  if (p < 1 || q < 1 || y->h != p || y->w != q) return CUDNN_STATUS_BAD_PARAM;
  const bool tf32 = x->type == CUDNN_DATA_FLOAT && conv->math != CUDNN_FMA_MATH;
  *g = {x->n,        x->c,
        x->h,        x->w,
        w->k,        w->r,
        w->s,        p,
        q,           conv->pad_h,
        conv->pad_w, conv->u,
        conv->v,     conv->dil_h,
        conv->dil_w, conv->mode == CUDNN_CONVOLUTION,
        tf32,        element_type(x->type)};
  return CUDNN_STATUS_SUCCESS;
}

// The algorithm's workspace must be there, and is used in full (AddressSanitizer checks it).
cudnnStatus_t use_workspace(int algo, int count, void* workspace, size_t bytes) {
  if (algo < 0 || algo >= count) return CUDNN_STATUS_BAD_PARAM;
  const size_t needed = static_cast<size_t>(algo) * kWorkspacePerAlgo;
  if (bytes < needed || (needed > 0 && workspace == nullptr)) return CUDNN_STATUS_BAD_PARAM;
  if (needed > 0) std::memset(workspace, 0xA5, needed);
  return CUDNN_STATUS_SUCCESS;
}

// out[i] = alpha * sum + beta * out[i]; beta = 0 does not read out.
void blend(void* out, cudaDataType_t type, int64_t i, float alpha, float sum, float beta) {
  const float old = beta == 0.f ? 0.f : beta * emu::load_as_float(out, type, i);
  emu::store_float(out, type, i, alpha * sum + old);
}

template <typename Perf, typename Algo>
cudnnStatus_t list_algorithms(const cudnnConvolutionStruct* conv, int count, int requested,
                              int* returned, Perf* perfs) {
  if (returned == nullptr || perfs == nullptr || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  const int n = requested < count ? requested : count;
  for (int a = 0; a < n; ++a) {
    perfs[a] = {};
    perfs[a].algo = static_cast<Algo>(a);
    perfs[a].status = CUDNN_STATUS_SUCCESS;
    perfs[a].time = static_cast<float>(a);  // listed fastest first
    perfs[a].memory = static_cast<size_t>(a) * kWorkspacePerAlgo;
    perfs[a].determinism = CUDNN_DETERMINISTIC;
    perfs[a].mathType = conv->math;
  }
  *returned = n;
  return CUDNN_STATUS_SUCCESS;
}

// cudnnGet*Algorithm_v7 of one direction (`count` algorithms).
template <typename Perf, typename Algo>
cudnnStatus_t get_algorithms(cudnnHandle_t handle, const Convolution& d, int count, int requested,
                             int* returned, Perf* perfs) {
  Geometry g;
  if (const cudnnStatus_t st = geometry(handle, d, &g); st != CUDNN_STATUS_SUCCESS) return st;
  return list_algorithms<Perf, Algo>(d.conv, count, requested, returned, perfs);
}

// The buffers cudnnFind*AlgorithmEx must be given (two inputs, an output, and a workspace wherever
// bytes are offered) before it lists as cudnnGet*Algorithm_v7 does.
// The search runs and times each algorithm, waiting for the GPU: a stream capture refuses it
// (warm up, with the search, before capturing).
bool find_buffers_valid(const void* a, const void* b, const void* out, const void* workspace,
                        size_t workspace_bytes) {
  if (emu::check_wait_allowed(nullptr, true) != cudaSuccess) return false;
  return a != nullptr && b != nullptr && out != nullptr &&
         (workspace != nullptr || workspace_bytes == 0);
}

// cudnnGet*WorkspaceSize of one direction (`count` algorithms).
cudnnStatus_t workspace_size(cudnnHandle_t handle, const Convolution& d, int algo, int count,
                             size_t* bytes) {
  Geometry g;
  if (const cudnnStatus_t st = geometry(handle, d, &g); st != CUDNN_STATUS_SUCCESS) return st;
  if (bytes == nullptr || algo < 0 || algo >= count) return CUDNN_STATUS_BAD_PARAM;
  *bytes = static_cast<size_t>(algo) * kWorkspacePerAlgo;
  return CUDNN_STATUS_SUCCESS;
}

void forward(const Geometry& g, float alpha, const void* x, const void* w, float beta, void* y) {
  for (int n = 0; n < g.n; ++n)
    for (int k = 0; k < g.k; ++k)
      for (int p = 0; p < g.p; ++p)
        for (int q = 0; q < g.q; ++q) {
          float sum = 0.f;
          for (int c = 0; c < g.c; ++c)
            for (int r = 0; r < g.r; ++r)
              for (int s = 0; s < g.s; ++s) {
                const int hh = g.in_row(p, r), ww = g.in_col(q, s);
                if (hh < 0 || hh >= g.h || ww < 0 || ww >= g.w) continue;
                sum += g.in(emu::load_as_float(x, g.type, g.x_at(n, c, hh, ww))) *
                       g.in(emu::load_as_float(w, g.type, g.w_at(k, c, r, s)));
              }
          blend(y, g.type, g.y_at(n, k, p, q), alpha, sum, beta);
        }
}

// dx[n, c, h, w] = sum over the (k, r, s, p, q) whose tap reads (h, w) of dy[n, k, p, q] w[k, c, r,
// s].
void backward_data(const Geometry& g, float alpha, const void* w, const void* dy, float beta,
                   void* dx) {
  const int64_t count = int64_t{g.n} * g.c * g.h * g.w;
  // Gathered per input pixel: for each tap, the output pixel (if any) that read it.
  for (int64_t i = 0; i < count; ++i) {
    const int ww = static_cast<int>(i % g.w), hh = static_cast<int>(i / g.w % g.h);
    const int c = static_cast<int>(i / (int64_t{g.w} * g.h) % g.c);
    const int n = static_cast<int>(i / (int64_t{g.w} * g.h * g.c));
    float sum = 0.f;
    for (int k = 0; k < g.k; ++k)
      for (int r = 0; r < g.r; ++r)
        for (int s = 0; s < g.s; ++s) {
          const int tap_r = g.flip ? g.r - 1 - r : r, tap_s = g.flip ? g.s - 1 - s : s;
          const int row = hh + g.pad_h - tap_r * g.dil_h, col = ww + g.pad_w - tap_s * g.dil_w;
          if (row < 0 || col < 0 || row % g.u != 0 || col % g.v != 0) continue;
          const int p = row / g.u, q = col / g.v;
          if (p >= g.p || q >= g.q) continue;
          sum += g.in(emu::load_as_float(dy, g.type, g.y_at(n, k, p, q))) *
                 g.in(emu::load_as_float(w, g.type, g.w_at(k, c, r, s)));
        }
    blend(dx, g.type, i, alpha, sum, beta);
  }
}

void backward_filter(const Geometry& g, float alpha, const void* x, const void* dy, float beta,
                     void* dw) {
  for (int k = 0; k < g.k; ++k)
    for (int c = 0; c < g.c; ++c)
      for (int r = 0; r < g.r; ++r)
        for (int s = 0; s < g.s; ++s) {
          float sum = 0.f;
          for (int n = 0; n < g.n; ++n)
            for (int p = 0; p < g.p; ++p)
              for (int q = 0; q < g.q; ++q) {
                const int hh = g.in_row(p, r), ww = g.in_col(q, s);
                if (hh < 0 || hh >= g.h || ww < 0 || ww >= g.w) continue;
                sum += g.in(emu::load_as_float(x, g.type, g.x_at(n, c, hh, ww))) *
                       g.in(emu::load_as_float(dy, g.type, g.y_at(n, k, p, q)));
              }
          blend(dw, g.type, g.w_at(k, c, r, s), alpha, sum, beta);
        }
}

// forward, backward_data and backward_filter: out = alpha op(a, b) + beta out.
using Direction = void (*)(const Geometry& g, float alpha, const void* a, const void* b, float beta,
                           void* out);

// A convolution call of any direction: the checks, in cuDNN's order, then `compute`, with the
// right to write the result (emu::OutputsWritable: the library's kernels write it).
cudnnStatus_t convolve(cudnnHandle_t handle, const Convolution& d, const void* alpha, const void* a,
                       const void* b, const void* beta, void* out, int algo, int count,
                       void* workspace, size_t workspace_bytes, Direction compute) {
  if (alpha == nullptr || beta == nullptr || !a || !b || !out) return CUDNN_STATUS_BAD_PARAM;
  Geometry g;
  if (const cudnnStatus_t st = geometry(handle, d, &g); st != CUDNN_STATUS_SUCCESS) return st;
  const emu::OutputsWritable writable;
  if (const cudnnStatus_t st = use_workspace(algo, count, workspace, workspace_bytes);
      st != CUDNN_STATUS_SUCCESS)
    return st;
  // alpha and beta are host scalars, read when the call is made (a captured graph keeps them).
  const float alpha_value = *static_cast<const float*>(alpha);
  const float beta_value = *static_cast<const float*>(beta);
  const cudaError_t queued = emu::enqueue(handle->stream, [=] {
    const emu::OutputsWritable writable_at_run;
    compute(g, alpha_value, a, b, beta_value, out);
  });
  return queued == cudaSuccess ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_EXECUTION_FAILED;
}

// cudnnSetTensor4dDescriptor and cudnnSetFilter4dDescriptor: four positive sizes, NCHW, a type
// the emulator computes.
template <typename Descriptor>
cudnnStatus_t set_4d(Descriptor* desc, cudnnTensorFormat_t format, cudnnDataType_t type, int n0,
                     int n1, int n2, int n3) {
  if (desc == nullptr || n0 < 1 || n1 < 1 || n2 < 1 || n3 < 1) return CUDNN_STATUS_BAD_PARAM;
  if (format != CUDNN_TENSOR_NCHW || !known_type(type)) return CUDNN_STATUS_NOT_SUPPORTED;
  *desc = {true, type, n0, n1, n2, n3};
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t destroy_object(T* object) {
  delete object;
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS:
      return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED:
      return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_ALLOC_FAILED:
      return "CUDNN_STATUS_ALLOC_FAILED";
    case CUDNN_STATUS_BAD_PARAM:
      return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_INTERNAL_ERROR:
      return "CUDNN_STATUS_INTERNAL_ERROR";
    case CUDNN_STATUS_INVALID_VALUE:
      return "CUDNN_STATUS_INVALID_VALUE";
    case CUDNN_STATUS_ARCH_MISMATCH:
      return "CUDNN_STATUS_ARCH_MISMATCH";
    case CUDNN_STATUS_MAPPING_ERROR:
      return "CUDNN_STATUS_MAPPING_ERROR";
    case CUDNN_STATUS_EXECUTION_FAILED:
      return "CUDNN_STATUS_EXECUTION_FAILED";
    case CUDNN_STATUS_NOT_SUPPORTED:
      return "CUDNN_STATUS_NOT_SUPPORTED";
  }
  return "CUDNN_STATUS_UNKNOWN";
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  return emu::create_object(handle, kStatuses);
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  return destroy_object(handle);
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  return emu::write_setting(handle, &cudnnContext::stream, stream, kStatuses);
}
cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  return emu::read_setting(handle, &cudnnContext::stream, stream, kStatuses);
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  return emu::create_object(desc, kStatuses);
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  return destroy_object(desc);
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w) {
  return set_4d(desc, format, type, n, c, h, w);
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc) {
  return emu::create_object(desc, kStatuses);
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  return destroy_object(desc);
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  return set_4d(desc, format, type, k, c, h, w);
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc) {
  return emu::create_object(desc, kStatuses);
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  return destroy_object(desc);
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute_type) {
  if (desc == nullptr || pad_h < 0 || pad_w < 0 || u < 1 || v < 1 || dilation_h < 1 ||
      dilation_w < 1 || (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION))
    return CUDNN_STATUS_BAD_PARAM;
  if (compute_type != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  desc->set = true;
  desc->pad_h = pad_h;
  desc->pad_w = pad_w;
  desc->u = u;
  desc->v = v;
  desc->dil_h = dilation_h;
  desc->dil_w = dilation_w;
  desc->mode = mode;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  if (desc == nullptr || math < CUDNN_DEFAULT_MATH || math > CUDNN_FMA_MATH)
    return CUDNN_STATUS_BAD_PARAM;
  desc->math = math;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  if (desc == nullptr || groups < 1) return CUDNN_STATUS_BAD_PARAM;
  return groups == 1 ? CUDNN_STATUS_SUCCESS : CUDNN_STATUS_NOT_SUPPORTED;
}

// ---- forward
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, int requested, int* returned,
    cudnnConvolutionFwdAlgoPerf_t* perfs) {
  return get_algorithms<cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t>(
      handle, {x, w, conv, y}, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, requested, returned, perfs);
}
cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, const void* x,
    cudnnFilterDescriptor_t wDesc, const void* w, cudnnConvolutionDescriptor_t conv,
    cudnnTensorDescriptor_t yDesc, void* y, int requested, int* returned,
    cudnnConvolutionFwdAlgoPerf_t* perfs, void* workspace, size_t workspace_bytes) {
  if (!find_buffers_valid(x, w, y, workspace, workspace_bytes)) return CUDNN_STATUS_BAD_PARAM;
  return cudnnGetConvolutionForwardAlgorithm_v7(handle, xDesc, wDesc, conv, yDesc, requested,
                                                returned, perfs);
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
    size_t* bytes) {
  return workspace_size(handle, {x, w, conv, y}, algo, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, bytes);
}
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      cudnnTensorDescriptor_t xDesc, const void* x,
                                      cudnnFilterDescriptor_t wDesc, const void* w,
                                      cudnnConvolutionDescriptor_t conv,
                                      cudnnConvolutionFwdAlgo_t algo, void* workspace,
                                      size_t workspace_bytes, const void* beta,
                                      cudnnTensorDescriptor_t yDesc, void* y) {
  return convolve(handle, {xDesc, wDesc, conv, yDesc}, alpha, x, w, beta, y, algo,
                  CUDNN_CONVOLUTION_FWD_ALGO_COUNT, workspace, workspace_bytes, forward);
}

// ---- backward data
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t handle, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx, int requested, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* perfs) {
  return get_algorithms<cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t>(
      handle, {dx, w, conv, dy}, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, requested, returned, perfs);
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, cudnnFilterDescriptor_t wDesc, const void* w,
    cudnnTensorDescriptor_t dyDesc, const void* dy, cudnnConvolutionDescriptor_t conv,
    cudnnTensorDescriptor_t dxDesc, void* dx, int requested, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* perfs, void* workspace, size_t workspace_bytes) {
  if (!find_buffers_valid(w, dy, dx, workspace, workspace_bytes)) return CUDNN_STATUS_BAD_PARAM;
  return cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, wDesc, dyDesc, conv, dxDesc, requested,
                                                     returned, perfs);
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
  return workspace_size(handle, {dx, w, conv, dy}, algo, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT,
                        bytes);
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           cudnnFilterDescriptor_t wDesc, const void* w,
                                           cudnnTensorDescriptor_t dyDesc, const void* dy,
                                           cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* workspace,
                                           size_t workspace_bytes, const void* beta,
                                           cudnnTensorDescriptor_t dxDesc, void* dx) {
  return convolve(handle, {dxDesc, wDesc, conv, dyDesc}, alpha, w, dy, beta, dx, algo,
                  CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, workspace, workspace_bytes, backward_data);
}

// ---- backward filter
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw, int requested, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* perfs) {
  return get_algorithms<cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t>(
      handle, {x, dw, conv, dy}, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, requested, returned,
      perfs);
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, cudnnTensorDescriptor_t xDesc, const void* x,
    cudnnTensorDescriptor_t dyDesc, const void* dy, cudnnConvolutionDescriptor_t conv,
    cudnnFilterDescriptor_t dwDesc, void* dw, int requested, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* perfs, void* workspace, size_t workspace_bytes) {
  if (!find_buffers_valid(x, dy, dw, workspace, workspace_bytes)) return CUDNN_STATUS_BAD_PARAM;
  return cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, xDesc, dyDesc, conv, dwDesc,
                                                       requested, returned, perfs);
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
  return workspace_size(handle, {x, dw, conv, dy}, algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT,
                        bytes);
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             cudnnTensorDescriptor_t xDesc, const void* x,
                                             cudnnTensorDescriptor_t dyDesc, const void* dy,
                                             cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workspace,
                                             size_t workspace_bytes, const void* beta,
                                             cudnnFilterDescriptor_t dwDesc, void* dw) {
  return convolve(handle, {xDesc, dwDesc, conv, dyDesc}, alpha, x, dy, beta, dw, algo,
                  CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, workspace, workspace_bytes,
                  backward_filter);
}
