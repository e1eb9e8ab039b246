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

#include "emulated_mismatch.h"
#include "gemm_cases.h"
#include "gtl_judge_output.h"
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

// One TODO's GEMM over every shape, fp16 then bf16; stops at the first failing case.
void expect_gemm_right(const std::string& test, const std::string& todo, Gemm fp16, GemmBf16 bf16) {
  gtl::judge::Outputs recorded(test);
  for (bool use_bf16 : {false, true})
    for (const Shape& s : shapes(test)) {
      const Inputs in = inputs(s, use_bf16);
      const Reference want = reference(s, in);
      DeviceLike<float> c(size_t(s.m) * s.n);
      std::fill(c.data(), c.data() + size_t(s.m) * s.n, std::numeric_limits<float>::quiet_NaN());
      if (use_bf16) {
        DeviceLike<__nv_bfloat16> a = upload<__nv_bfloat16>(in.a), b = upload<__nv_bfloat16>(in.b);
        bf16(a.data(), b.data(), c.data(), s.m, s.n, s.k, nullptr);
      } else {
        DeviceLike<__half> a = upload<__half>(in.a), b = upload<__half>(in.b);
        fp16(a.data(), b.data(), c.data(), s.m, s.n, s.k, nullptr);
      }
      const std::vector<float> got(c.data(), c.data() + size_t(s.m) * s.n);
      recorded.record_all(got);
      expect_no_mismatch(first_mismatch(want.c, want.tolerance, got.data()),
                         ::testing::Message()
                             << todo << ", " << describe(s, use_bf16) << ", "
                             << gtl::test_seed::describe()
                             << ": NaN means a tile of C never stored (a tail block, a warp that "
                                "returned early); wrong everywhere by about 1e-3 relative means "
                                "16-bit accumulation; wrong values, a transposed tile or a "
                                "fragment indexed as if its layout were known (revisit: WMMA "
                                "fragments and ldm, handout)");
      if (::testing::Test::HasFailure()) return;
    }
}

TEST(EmulatedWmmaGemm, TiledThroughSharedMemory) {
  expect_gemm_right("EmulatedWmmaGemm.TiledThroughSharedMemory", "TODO 4a tiled GEMM",
                    lab10::wmma_gemm_tiled, lab10::wmma_gemm_tiled);
}

TEST(EmulatedWmmaGemm, Fast) {
  expect_gemm_right("EmulatedWmmaGemm.Fast", "TODO 4b fast GEMM", lab10::wmma_gemm_fast,
                    lab10::wmma_gemm_fast);
}

}  // namespace
