// Lab 10, TODO 4 on a GPU: the tiled (4a) and fast (4b) tensor-core GEMMs in fp16 and bf16 against
// the exact product (tests/gemm_cases.h, shared with the emulated tests and the judge), at their
// shapes and at sizes the emulator cannot reach; the real tensor cores add in an order of their
// own, which the derived tolerances allow. Each test skips, with the reason, without a GPU (or on
// a GPU older than sm_80), and records what your kernel computed for the judge.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "gemm_check.h"
#include "gtl_test.h"

#ifdef GTL_WITH_CUDA
#include "tensor_core_gemm.h"
#endif

namespace {

using namespace lab10_gemm_cases;

#ifdef GTL_WITH_CUDA

// A device buffer of n elements of T.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) { cudaMalloc(&data_, n * sizeof(T)); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* data() const { return data_; }
  void upload(const std::vector<T>& values) {
    cudaMemcpy(data_, values.data(), n_ * sizeof(T), cudaMemcpyHostToDevice);
  }
  std::vector<T> download() const {
    std::vector<T> out(n_);
    cudaMemcpy(out.data(), data_, n_ * sizeof(T), cudaMemcpyDeviceToHost);
    return out;
  }

 private:
  size_t n_;
  T* data_ = nullptr;
};

bool has_bf16_tensor_cores() {
  int device = 0, major = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
  return major >= 8;
}

template <typename T>
std::vector<T> as(const std::vector<float>& values) {
  return std::vector<T>(values.begin(), values.end());
}

using Gemm = void (*)(const __half*, const __half*, float*, int, int, int, cudaStream_t);
using GemmBf16 = void (*)(const __nv_bfloat16*, const __nv_bfloat16*, float*, int, int, int,
                          cudaStream_t);

// Runs one TODO's GEMM on the GPU, C starting as NaN.
RunGemm on_the_gpu(const std::string& todo, Gemm fp16, GemmBf16 bf16) {
  return [todo, fp16, bf16](const Shape& s, const Inputs& in, bool use_bf16) {
    DeviceBuffer<float> c(size_t(s.m) * s.n);
    c.upload(std::vector<float>(size_t(s.m) * s.n, std::numeric_limits<float>::quiet_NaN()));
    if (use_bf16) {
      DeviceBuffer<__nv_bfloat16> a(in.a.size()), b(in.b.size());
      a.upload(as<__nv_bfloat16>(in.a));
      b.upload(as<__nv_bfloat16>(in.b));
      bf16(a.data(), b.data(), c.data(), s.m, s.n, s.k, nullptr);
    } else {
      DeviceBuffer<__half> a(in.a.size()), b(in.b.size());
      a.upload(as<__half>(in.a));
      b.upload(as<__half>(in.b));
      fp16(a.data(), b.data(), c.data(), s.m, s.n, s.k, nullptr);
    }
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess) << todo << " at " << describe(s, use_bf16);
    return c.download();
  };
}

TEST(WmmaGemm, TiledThroughSharedMemory) {
  GTL_REQUIRE_GPU();
  if (!has_bf16_tensor_cores()) GTEST_SKIP() << "needs bf16 tensor cores (sm_80 or newer)";
  expect_gemm_right("WmmaGemm.TiledThroughSharedMemory", "TODO 4a tiled GEMM on the GPU",
                    gpu_shapes("WmmaGemm.TiledThroughSharedMemory"),
                    on_the_gpu("TODO 4a", lab10::wmma_gemm_tiled, lab10::wmma_gemm_tiled));
}

TEST(WmmaGemm, Fast) {
  GTL_REQUIRE_GPU();
  if (!has_bf16_tensor_cores()) GTEST_SKIP() << "needs bf16 tensor cores (sm_80 or newer)";
  expect_gemm_right("WmmaGemm.Fast", "TODO 4b fast GEMM on the GPU", gpu_shapes("WmmaGemm.Fast"),
                    on_the_gpu("TODO 4b", lab10::wmma_gemm_fast, lab10::wmma_gemm_fast));
}

#else

TEST(WmmaGemm, NeedsTheCudaBackend) {
  GTEST_SKIP() << "needs a CUDA GPU: " << gtl::cuda_unavailable_reason();
}

#endif  // GTL_WITH_CUDA

}  // namespace
