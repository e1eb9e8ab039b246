// Lab 10, TODO 4 on the CPU emulator: your tiled (4a) and fast (4b) tensor-core GEMMs in fp16 and
// bf16 against the exact product (tests/gemm_cases.h, which the judge shares), each element
// within its derived tolerance. The emulator's WMMA (common/emulator/mma.h) checks what a GPU
// leaves undefined: every lane of a warp in each collective call, 32-byte aligned pointers, ldm a
// multiple of 16 bytes; and its fragments hide their layout, so code that assumes one fails. C
// starts as NaN, so a tile never stored fails. Each test records what your kernel computed for
// the judge.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "gemm_check.h"
#include "tensor_core_gemm.h"

namespace {

using namespace lab10_gemm_cases;

// n elements of T, 256-byte aligned as cudaMalloc's are (the fragments need 32).
template <typename T>
class DeviceLike {
 public:
  explicit DeviceLike(size_t n) : storage_(n * sizeof(T) + 256) {
    const auto at = reinterpret_cast<uintptr_t>(storage_.data());
    data_ = reinterpret_cast<T*>((at + 255) / 256 * 256);
  }
  T* data() { return data_; }

 private:
  std::vector<unsigned char> storage_;
  T* data_;
};

template <typename T>
DeviceLike<T> upload(const std::vector<float>& values) {
  DeviceLike<T> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) out.data()[i] = T(values[i]);
  return out;
}

using Gemm = void (*)(const __half*, const __half*, float*, int, int, int, cudaStream_t);
using GemmBf16 = void (*)(const __nv_bfloat16*, const __nv_bfloat16*, float*, int, int, int,
                          cudaStream_t);

// Runs one TODO's GEMM on the emulator, C starting as NaN.
RunGemm on_the_emulator(Gemm fp16, GemmBf16 bf16) {
  return [fp16, bf16](const Shape& s, const Inputs& in, bool use_bf16) {
    DeviceLike<float> c(size_t(s.m) * s.n);
    std::fill(c.data(), c.data() + size_t(s.m) * s.n, std::numeric_limits<float>::quiet_NaN());
    if (use_bf16) {
      DeviceLike<__nv_bfloat16> a = upload<__nv_bfloat16>(in.a), b = upload<__nv_bfloat16>(in.b);
      bf16(a.data(), b.data(), c.data(), s.m, s.n, s.k, nullptr);
    } else {
      DeviceLike<__half> a = upload<__half>(in.a), b = upload<__half>(in.b);
      fp16(a.data(), b.data(), c.data(), s.m, s.n, s.k, nullptr);
    }
    return std::vector<float>(c.data(), c.data() + size_t(s.m) * s.n);
  };
}

TEST(EmulatedWmmaGemm, TiledThroughSharedMemory) {
  expect_gemm_right("EmulatedWmmaGemm.TiledThroughSharedMemory", "TODO 4a tiled GEMM",
                    shapes("EmulatedWmmaGemm.TiledThroughSharedMemory"),
                    on_the_emulator(lab10::wmma_gemm_tiled, lab10::wmma_gemm_tiled));
}

TEST(EmulatedWmmaGemm, Fast) {
  expect_gemm_right("EmulatedWmmaGemm.Fast", "TODO 4b fast GEMM", shapes("EmulatedWmmaGemm.Fast"),
                    on_the_emulator(lab10::wmma_gemm_fast, lab10::wmma_gemm_fast));
}

}  // namespace
