// The emulated cuBLAS and cuDNN (common/emulator/cublas_emulated.h, cudnn_emulated.h) against
// the libraries' documented semantics, case by case: column-major storage with leading
// dimensions, transposes, alpha and beta (beta = 0 never reads the output), TF32 rounding, the
// convolution's geometry and both of its modes, workspaces, and the error codes for bad
// arguments. Small integers throughout, so every expected value is exact.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cublas_v2.h"
#include "cudnn.h"

namespace {

constexpr float kNaN = NAN;

class EmulatedCublas : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(cublasCreate(&handle_), CUBLAS_STATUS_SUCCESS); }
  void TearDown() override { EXPECT_EQ(cublasDestroy(handle_), CUBLAS_STATUS_SUCCESS); }

  cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                      const float* a, int lda, const float* b, int ldb, float beta, float* c,
                      int ldc, cublasComputeType_t compute = CUBLAS_COMPUTE_32F) {
    const float alpha = 1.f;
    return cublasGemmEx(handle_, ta, tb, m, n, k, &alpha, a, CUDA_R_32F, lda, b, CUDA_R_32F, ldb,
                        &beta, c, CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT);
  }

  cublasHandle_t handle_ = nullptr;
};

// A = [[1, 2, 3], [4, 5, 6]] (2 x 3) stored column-major with lda = 4: rows 2 and 3 of each
// column are padding (NaN), which must never be read. B = [[1, 0], [0, 1], [1, 1]] (3 x 2),
// ldb = 3. C = A B = [[4, 5], [10, 11]] with ldc = 3: C's padding row keeps its value.
TEST_F(EmulatedCublas, ColumnMajorWithLeadingDimensionsBeyondTheRows) {
  const std::vector<float> a = {1, 4, kNaN, kNaN, 2, 5, kNaN, kNaN, 3, 6, kNaN, kNaN};
  const std::vector<float> b = {1, 0, 1, 0, 1, 1};
  std::vector<float> c = {kNaN, kNaN, -7, kNaN, kNaN, -7};
  ASSERT_EQ(gemm(CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, a.data(), 4, b.data(), 3, 0.f, c.data(), 3),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(c, (std::vector<float>{4, 10, -7, 5, 11, -7}))
      << "C = A B column-major (ldc = 3); beta = 0 must not read C's NaN, row 2 is padding";
}

// op(A) = A^T: A stored as 3 x 2 (lda = 3) is [[1, 4], [2, 5], [3, 6]], its transpose the A above;
// op(B) = B^T with B stored 2 x 3 (ldb = 2). beta = 1 adds the old C.
TEST_F(EmulatedCublas, TransposesAndBeta) {
  const std::vector<float> at = {1, 2, 3, 4, 5, 6};
  const std::vector<float> bt = {1, 0, 0, 1, 1, 1};
  std::vector<float> c = {100, 100, 100, 100};
  ASSERT_EQ(gemm(CUBLAS_OP_T, CUBLAS_OP_T, 2, 2, 3, at.data(), 3, bt.data(), 2, 1.f, c.data(), 2),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(c, (std::vector<float>{104, 110, 105, 111})) << "C = A^T^T B^T^T + C";
}

// 1 + 2^-20 needs 21 mantissa bits: float32 keeps it, TF32 (10 bits) rounds it to 1.
TEST_F(EmulatedCublas, FastTf32RoundsTheInputsAndFloat32DoesNot) {
  const float x = 1.f + std::ldexp(1.f, -20), one = 1.f;
  float c32 = 0.f, ctf32 = 0.f;
  ASSERT_EQ(gemm(CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &x, 1, &one, 1, 0.f, &c32, 1),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(gemm(CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &x, 1, &one, 1, 0.f, &ctf32, 1,
                 CUBLAS_COMPUTE_32F_FAST_TF32),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(c32, x) << "CUBLAS_COMPUTE_32F keeps float32 inputs";
  EXPECT_EQ(ctf32, 1.f) << "CUBLAS_COMPUTE_32F_FAST_TF32 keeps 10 mantissa bits";
}

// float16 in and out, float32 accumulation: 2049 is not a float16 (spacing 2 above 2048), so
// 2048 + 1 rounds to even, 2048; computed in float16 step by step it could not be 2049 either,
// but 1024 + 1024 + 1 computed in float32 then rounded once is 2048, not 2050.
TEST_F(EmulatedCublas, HalfDataAccumulatesInFloat32AndRoundsOnce) {
  const uint16_t one = 0x3c00, h1024 = 0x6400;  // 1 and 1024 in float16
  const std::vector<uint16_t> a = {h1024, h1024, one}, b = {one, one, one};
  uint16_t c = 0;
  const float alpha = 1.f, beta = 0.f;
  ASSERT_EQ(cublasGemmEx(handle_, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 3, &alpha, a.data(), CUDA_R_16F,
                         1, b.data(), CUDA_R_16F, 3, &beta, &c, CUDA_R_16F, 1, CUBLAS_COMPUTE_32F,
                         CUBLAS_GEMM_DEFAULT),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(c, 0x6800) << "1024 + 1024 + 1 = 2049 in float32, rounded once to float16 2048";
}

TEST_F(EmulatedCublas, BadArgumentsGiveTheDocumentedStatus) {
  std::vector<float> a(16, 1.f), b(16, 1.f), c(16, 0.f);
  const auto n = CUBLAS_OP_N, t = CUBLAS_OP_T;
  EXPECT_EQ(gemm(n, n, -1, 2, 2, a.data(), 2, b.data(), 2, 0.f, c.data(), 2),
            CUBLAS_STATUS_INVALID_VALUE)
      << "m < 0";
  EXPECT_EQ(gemm(n, n, 3, 2, 2, a.data(), 2, b.data(), 2, 0.f, c.data(), 3),
            CUBLAS_STATUS_INVALID_VALUE)
      << "lda = 2 < max(1, m = 3) with op(A) = N";
  EXPECT_EQ(gemm(t, n, 3, 2, 4, a.data(), 3, b.data(), 4, 0.f, c.data(), 3),
            CUBLAS_STATUS_INVALID_VALUE)
      << "lda = 3 < max(1, k = 4) with op(A) = T";
  EXPECT_EQ(gemm(n, t, 2, 3, 2, a.data(), 2, b.data(), 2, 0.f, c.data(), 2),
            CUBLAS_STATUS_INVALID_VALUE)
      << "ldb = 2 < max(1, n = 3) with op(B) = T";
  EXPECT_EQ(gemm(n, n, 2, 2, 2, a.data(), 2, b.data(), 2, 0.f, c.data(), 1),
            CUBLAS_STATUS_INVALID_VALUE)
      << "ldc = 1 < max(1, m = 2)";
  EXPECT_EQ(gemm(n, n, 0, 0, 0, a.data(), 1, b.data(), 1, 0.f, c.data(), 1), CUBLAS_STATUS_SUCCESS)
      << "empty sizes with leading dimensions of 1 are valid";
  const float one = 1.f;
  EXPECT_EQ(
      cublasGemmEx(handle_, n, n, 2, 2, 2, &one, a.data(), CUDA_R_32F, 2, b.data(), CUDA_R_16F, 2,
                   &one, c.data(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_NOT_SUPPORTED)
      << "A float32 and B float16: a combination the emulator does not compute";
  EXPECT_EQ(
      cublasGemmEx(nullptr, n, n, 2, 2, 2, &one, a.data(), CUDA_R_32F, 2, b.data(), CUDA_R_32F, 2,
                   &one, c.data(), CUDA_R_32F, 2, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      CUBLAS_STATUS_NOT_INITIALIZED)
      << "no handle";
}

// The handle's calls: the stream and math mode set are the ones read back, and each missing
// pointer gets cuBLAS's status (no handle: NOT_INITIALIZED; any other pointer: INVALID_VALUE).
TEST(EmulatedCublasHandle, StreamAndMathModeRoundTripWithTheDocumentedStatuses) {
  EXPECT_EQ(cublasCreate(nullptr), CUBLAS_STATUS_INVALID_VALUE) << "nowhere to put the handle";
  cudaStream_t stream = nullptr, got = nullptr;
  cublasMath_t mode = CUBLAS_DEFAULT_MATH;
  EXPECT_EQ(cublasSetStream(nullptr, stream), CUBLAS_STATUS_NOT_INITIALIZED) << "no handle";
  EXPECT_EQ(cublasGetStream(nullptr, &got), CUBLAS_STATUS_NOT_INITIALIZED) << "no handle";
  EXPECT_EQ(cublasGetMathMode(nullptr, &mode), CUBLAS_STATUS_NOT_INITIALIZED) << "no handle";
  EXPECT_EQ(cublasDestroy(nullptr), CUBLAS_STATUS_NOT_INITIALIZED) << "no handle";
  cublasHandle_t handle = nullptr;
  ASSERT_EQ(cublasCreate(&handle), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetStream(handle, nullptr), CUBLAS_STATUS_INVALID_VALUE) << "nowhere to write";
  EXPECT_EQ(cublasGetMathMode(handle, nullptr), CUBLAS_STATUS_INVALID_VALUE) << "nowhere to write";
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  EXPECT_EQ(cublasSetStream(handle, stream), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetStream(handle, &got), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(got, stream) << "the stream read back is not the one set";
  EXPECT_EQ(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasGetMathMode(handle, &mode), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(mode, CUBLAS_PEDANTIC_MATH) << "the math mode read back is not the one set";
  EXPECT_EQ(cublasDestroy(handle), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// ---- cuDNN -------------------------------------------------------------------------------------
class EmulatedCudnn : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudnnCreate(&handle_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateTensorDescriptor(&x_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateTensorDescriptor(&y_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateFilterDescriptor(&w_), CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnCreateConvolutionDescriptor(&conv_), CUDNN_STATUS_SUCCESS);
  }
  void TearDown() override {
    cudnnDestroyConvolutionDescriptor(conv_);
    cudnnDestroyFilterDescriptor(w_);
    cudnnDestroyTensorDescriptor(y_);
    cudnnDestroyTensorDescriptor(x_);
    cudnnDestroy(handle_);
  }
  // x [1, 1, 3, 3] * w [1, 1, 2, 2], stride 1, no padding -> y [1, 1, 2, 2].
  void describe(cudnnConvolutionMode_t mode) {
    ASSERT_EQ(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 3),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 2, 2),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetFilter4dDescriptor(w_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 2, 2),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolution2dDescriptor(conv_, 0, 0, 1, 1, 1, 1, mode, CUDNN_DATA_FLOAT),
              CUDNN_STATUS_SUCCESS);
    ASSERT_EQ(cudnnSetConvolutionMathType(conv_, CUDNN_FMA_MATH), CUDNN_STATUS_SUCCESS);
  }
  cudnnStatus_t forward(const float* x, const float* w, float beta, float* y, int algo = 0,
                        void* workspace = nullptr, size_t bytes = 0) {
    const float alpha = 1.f;
    return cudnnConvolutionForward(handle_, &alpha, x_, x, w_, w, conv_,
                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), workspace, bytes,
                                   &beta, y_, y);
  }

  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
};

const std::vector<float> kX = {1, 2, 3, 4, 5, 6, 7, 8, 9}, kW = {1, 2, 3, 4};

// Cross-correlation: y[p, q] = sum x[p + r, q + s] w[r, s]; convolution flips the filter.
TEST_F(EmulatedCudnn, CrossCorrelationAndConvolutionModes) {
  describe(CUDNN_CROSS_CORRELATION);
  std::vector<float> y(4, kNaN);
  ASSERT_EQ(forward(kX.data(), kW.data(), 0.f, y.data()), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(y, (std::vector<float>{37, 47, 67, 77}))
      << "cross-correlation, beta = 0 (the NaN in y must not be read)";
  describe(CUDNN_CONVOLUTION);
  ASSERT_EQ(forward(kX.data(), kW.data(), 1.f, y.data()), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(y, (std::vector<float>{37 + 23, 47 + 33, 67 + 53, 77 + 63}))
      << "convolution (filter rotated 180 degrees) added to y (beta = 1)";
}

// The three passes are adjoint: <conv(x, w), dy> = <x, backward_data(dy, w)>
//                                                = <w, backward_filter(x, dy)>.
TEST_F(EmulatedCudnn, BackwardPassesAreTheAdjointsOfTheForward) {
  describe(CUDNN_CROSS_CORRELATION);
  const std::vector<float> dy = {1, -2, 3, 1};
  std::vector<float> y(4), dx(9), dw(4);
  const float one = 1.f, zero = 0.f;
  ASSERT_EQ(forward(kX.data(), kW.data(), 0.f, y.data()), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnConvolutionBackwardData(handle_, &one, w_, kW.data(), y_, dy.data(), conv_,
                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0, &zero, x_,
                                         dx.data()),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnConvolutionBackwardFilter(handle_, &one, x_, kX.data(), y_, dy.data(), conv_,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr, 0, &zero,
                                           w_, dw.data()),
            CUDNN_STATUS_SUCCESS);
  const auto dot = [](const std::vector<float>& a, const std::vector<float>& b) {
    float s = 0.f;
    for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
    return s;
  };
  EXPECT_EQ(dot(y, dy), dot(kX, dx)) << "backward data is not the adjoint of the forward";
  EXPECT_EQ(dot(y, dy), dot(kW, dw)) << "backward filter is not the adjoint of the forward";
  EXPECT_EQ(dx, (std::vector<float>{1, 0, -4, 6, 5, -6, 9, 15, 4}))
      << "dx[h, w] = sum of dy[p, q] w[h - p, w - q]";
}

TEST_F(EmulatedCudnn, WorkspaceAndAlgorithmQueries) {
  describe(CUDNN_CROSS_CORRELATION);
  cudnnConvolutionFwdAlgoPerf_t perfs[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  ASSERT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perfs),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(count, CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  EXPECT_EQ(perfs[0].mathType, CUDNN_FMA_MATH) << "results carry the descriptor's math type";
  size_t bytes = 0;
  ASSERT_EQ(cudnnGetConvolutionForwardWorkspaceSize(handle_, x_, w_, conv_, y_,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_GEMM, &bytes),
            CUDNN_STATUS_SUCCESS);
  ASSERT_GT(bytes, 0u);
  std::vector<unsigned char> workspace(bytes);
  std::vector<float> y(4);
  EXPECT_EQ(forward(kX.data(), kW.data(), 0.f, y.data(), CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                    workspace.data(), bytes - 1),
            CUDNN_STATUS_BAD_PARAM)
      << "a workspace one byte smaller than the algorithm's";
  EXPECT_EQ(forward(kX.data(), kW.data(), 0.f, y.data(), CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
                    workspace.data(), bytes),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(y, (std::vector<float>{37, 47, 67, 77})) << "every algorithm computes the same";
}

TEST_F(EmulatedCudnn, BadParametersGiveTheDocumentedStatus) {
  EXPECT_EQ(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, -1, 3, 3),
            CUDNN_STATUS_BAD_PARAM)
      << "a negative dimension";
  EXPECT_EQ(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 1, 3, 3),
            CUDNN_STATUS_BAD_PARAM)
      << "an empty batch: the core must never hand cuDNN an empty tensor";
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(conv_, -1, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM)
      << "negative padding";
  EXPECT_EQ(cudnnSetConvolution2dDescriptor(conv_, 0, 0, 0, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT),
            CUDNN_STATUS_BAD_PARAM)
      << "stride 0";
  describe(CUDNN_CROSS_CORRELATION);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 2),
            CUDNN_STATUS_SUCCESS);
  std::vector<float> y(6);
  EXPECT_EQ(forward(kX.data(), kW.data(), 0.f, y.data()), CUDNN_STATUS_BAD_PARAM)
      << "y described as 3 x 2 where the convolution gives 2 x 2";
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 1, 2, 2),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(forward(kX.data(), kW.data(), 0.f, y.data()), CUDNN_STATUS_BAD_PARAM)
      << "x float and y half";
}

// The handle's and descriptors' calls: the stream set is the one read back, and a missing
// pointer anywhere gets cuDNN's BAD_PARAM.
TEST(EmulatedCudnnHandle, StreamRoundTripsAndMissingPointersAreBadParameters) {
  EXPECT_EQ(cudnnCreate(nullptr), CUDNN_STATUS_BAD_PARAM) << "nowhere to put the handle";
  EXPECT_EQ(cudnnCreateTensorDescriptor(nullptr), CUDNN_STATUS_BAD_PARAM) << "no descriptor";
  EXPECT_EQ(cudnnCreateFilterDescriptor(nullptr), CUDNN_STATUS_BAD_PARAM) << "no descriptor";
  EXPECT_EQ(cudnnCreateConvolutionDescriptor(nullptr), CUDNN_STATUS_BAD_PARAM) << "no descriptor";
  EXPECT_EQ(cudnnSetFilter4dDescriptor(nullptr, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 1, 1, 1, 1),
            CUDNN_STATUS_BAD_PARAM)
      << "no descriptor";
  cudaStream_t stream = nullptr, got = nullptr;
  EXPECT_EQ(cudnnSetStream(nullptr, stream), CUDNN_STATUS_BAD_PARAM) << "no handle";
  EXPECT_EQ(cudnnGetStream(nullptr, &got), CUDNN_STATUS_BAD_PARAM) << "no handle";
  cudnnHandle_t handle = nullptr;
  ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetStream(handle, nullptr), CUDNN_STATUS_BAD_PARAM) << "nowhere to write";
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  EXPECT_EQ(cudnnSetStream(handle, stream), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnGetStream(handle, &got), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(got, stream) << "the stream read back is not the one set";
  EXPECT_EQ(cudnnDestroy(handle), CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Each direction's queries and call refuse what cuDNN refuses, with the same status: a missing
// handle or buffer, a workspace pointer missing for its bytes, an algorithm out of range, and
// descriptors that do not describe one convolution (y's shape wrong).
TEST_F(EmulatedCudnn, EveryDirectionRefusesMissingPointersAndWrongShapes) {
  describe(CUDNN_CROSS_CORRELATION);
  std::vector<float> x(kX), w(kW), y(4, 0.f);
  const float one = 1.f, zero = 0.f;
  int count = 0;
  size_t bytes = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  const auto fwd_algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  const auto data_algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  const auto filter_algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  SCOPED_TRACE("no handle: every call must return CUDNN_STATUS_BAD_PARAM");
  EXPECT_EQ(cudnnGetConvolutionForwardAlgorithm_v7(nullptr, x_, w_, conv_, y_, 1, &count, fwd),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(
      cudnnGetConvolutionBackwardDataAlgorithm_v7(nullptr, w_, y_, conv_, x_, 1, &count, data),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(
      cudnnGetConvolutionBackwardFilterAlgorithm_v7(nullptr, x_, y_, conv_, w_, 1, &count, filter),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnGetConvolutionForwardWorkspaceSize(nullptr, x_, w_, conv_, y_, fwd_algo, &bytes),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(
      cudnnGetConvolutionBackwardDataWorkspaceSize(nullptr, w_, y_, conv_, x_, data_algo, &bytes),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(nullptr, x_, y_, conv_, w_, filter_algo,
                                                           &bytes),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionForward(nullptr, &one, x_, x.data(), w_, w.data(), conv_, fwd_algo,
                                    nullptr, 0, &zero, y_, y.data()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionBackwardData(nullptr, &one, w_, w.data(), y_, y.data(), conv_,
                                         data_algo, nullptr, 0, &zero, x_, x.data()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionBackwardFilter(nullptr, &one, x_, x.data(), y_, y.data(), conv_,
                                           filter_algo, nullptr, 0, &zero, w_, w.data()),
            CUDNN_STATUS_BAD_PARAM);
  SCOPED_TRACE(
      "a missing buffer, scale or workspace, an algorithm out of range, or a null "
      "result pointer: CUDNN_STATUS_BAD_PARAM");
  EXPECT_EQ(cudnnFindConvolutionForwardAlgorithmEx(handle_, x_, x.data(), w_, nullptr, conv_, y_,
                                                   y.data(), 1, &count, fwd, nullptr, 0),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnFindConvolutionBackwardDataAlgorithmEx(handle_, w_, w.data(), y_, y.data(), conv_,
                                                        x_, x.data(), 1, &count, data, nullptr, 4),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(
      cudnnFindConvolutionBackwardFilterAlgorithmEx(handle_, x_, nullptr, y_, y.data(), conv_, w_,
                                                    w.data(), 1, &count, filter, nullptr, 0),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnGetConvolutionBackwardDataWorkspaceSize(
                handle_, w_, y_, conv_, x_,
                static_cast<cudnnConvolutionBwdDataAlgo_t>(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT),
                &bytes),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, x_, y_, conv_, w_, filter_algo,
                                                           nullptr),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionBackwardData(handle_, nullptr, w_, w.data(), y_, y.data(), conv_,
                                         data_algo, nullptr, 0, &zero, x_, x.data()),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionBackwardFilter(handle_, &one, x_, x.data(), y_, y.data(), conv_,
                                           filter_algo, nullptr, 0, &zero, w_, nullptr),
            CUDNN_STATUS_BAD_PARAM);
  SCOPED_TRACE("descriptors that fit: the queries succeed");
  EXPECT_EQ(cudnnFindConvolutionBackwardDataAlgorithmEx(handle_, w_, w.data(), y_, y.data(), conv_,
                                                        x_, x.data(), 1, &count, data, nullptr, 0),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(count, 1) << "one algorithm asked for, one listed";
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, x_, y_, conv_, w_, filter_algo,
                                                           &bytes),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(bytes, 0u) << "algorithm 0 needs no workspace";
  SCOPED_TRACE("y described as 3 x 2 where the convolution gives 2 x 2: no direction accepts it");
  ASSERT_EQ(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 3, 2),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(
      cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, w_, y_, conv_, x_, 1, &count, data),
      CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, x_, y_, conv_, w_, filter_algo,
                                                           &bytes),
            CUDNN_STATUS_BAD_PARAM);
  EXPECT_EQ(cudnnConvolutionBackwardFilter(handle_, &one, x_, x.data(), y_, y.data(), conv_,
                                           filter_algo, nullptr, 0, &zero, w_, w.data()),
            CUDNN_STATUS_BAD_PARAM);
}

}  // namespace
