// ops::matmul on the GPU (cuBLAS) against the CPU backend (OpenBLAS), which matmul_test.cpp
// checks against the loops. Every test starts with GTL_REQUIRE_GPU() and skips without a GPU.
//
// Tolerances (inputs uniform in [-1, 1], K <= 65):
//   float32, TF32 off   atol 1e-5 * K, rtol 1e-5: two float32 GEMMs summing in different orders
//   float32, TF32 on    atol 1e-2, rtol 1e-2: each input keeps 10 mantissa bits, so each product
//                       is off by up to ~2^-10 relative; sums of K such terms drift further
//   float16 / bfloat16  both backends round a float32 sum once; the sums differ in order, which
//                       can flip that rounding by one ulp: rtol 2^-10 (fp16) / 2^-7 (bf16)
// Small integers are exact in every mode (TF32 holds integers up to 2^11 exactly): asserted equal.
#include <cmath>
#include <string>
#include <vector>

#include "gemm_conv_reference.h"
#include "gtl/ops/math_mode.h"
#include "gtl/ops/matmul.h"
#include "gtl_test.h"

namespace {

using gtl::Device;
using gtl::DType;
using gtl::Generator;
using gtl::Shape;
using gtl::Tensor;
using gtl::ops::matmul;
using gtl::ops::matmul_out;
using gtl::testing::a_shape;
using gtl::testing::b_shape;
using gtl::testing::expect_close;
using gtl::testing::kShapes;
using gtl::testing::Mkn;
using gtl::testing::Tolerance;

std::string what(const std::string& mode, const Mkn& s, bool ta, bool tb) {
  return mode + " M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) +
         " N=" + std::to_string(s.n) + (ta ? " a^T" : " a") + (tb ? " b^T" : " b") +
         " (cuBLAS vs OpenBLAS: check the row-major operand swap in matmul.cu)";
}

const Device kGpu = Device::cuda(0);

TEST(MatmulCuda, Float32MatchesCpuWithAndWithoutTf32) {
  GTL_REQUIRE_GPU();
  Generator gen(30);
  for (bool tf32 : {false, true}) {
    gtl::ops::ScopedTF32 mode(tf32);
    for (const Mkn& s : kShapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          Tensor a = Tensor::uniform(a_shape(s, ta), gen, -1.f, 1.f);
          Tensor b = Tensor::uniform(b_shape(s, tb), gen, -1.f, 1.f);
          const Tolerance tol =
              tf32 ? Tolerance{1e-2, 1e-2} : Tolerance{1e-5 * static_cast<double>(s.k), 1e-5};
          expect_close(matmul(a.to(kGpu), b.to(kGpu), ta, tb), matmul(a, b, ta, tb), tol,
                       what(tf32 ? "fp32 TF32 on" : "fp32 TF32 off", s, ta, tb));
        }
  }
}

// 1 + 2^-20 needs 21 mantissa bits: float32 keeps it, TF32 (10 bits) would round it to 1.
TEST(MatmulCuda, Tf32OffKeepsFullFloat32Precision) {
  GTL_REQUIRE_GPU();
  gtl::ops::ScopedTF32 mode(false);
  const int64_t n = 256;
  Tensor a = Tensor::full({n, n}, 1.0 + std::ldexp(1.0, -20));
  std::vector<float> eye(static_cast<std::size_t>(n * n), 0.f);
  for (int64_t i = 0; i < n; ++i) eye[static_cast<std::size_t>(i * n + i)] = 1.f;
  Tensor b = Tensor::from_vector(eye, {n, n});
  EXPECT_EQ(matmul(a.to(kGpu), b.to(kGpu)).to_vector(), a.to_vector())
      << "A * I must be A exactly in float32; a difference means TF32 was used although "
         "ops::tf32_enabled() is false (compute type in matmul.cu)";
}

TEST(MatmulCuda, SmallIntegersAreExactInEveryMode) {
  GTL_REQUIRE_GPU();
  Generator gen(31);
  struct Mode {
    DType dtype;
    bool tf32;
    int range;
  };
  // fp32 and TF32: |sum| <= 128 * 16; fp16: <= 128 * 4 (11 bits); bf16: <= 32 * 4 (8 bits).
  for (const Mode& m : {Mode{DType::Float32, false, 4}, Mode{DType::Float32, true, 4},
                        Mode{DType::Float16, false, 2}, Mode{DType::BFloat16, false, 2}}) {
    gtl::ops::ScopedTF32 mode(m.tf32);
    const Mkn s = m.dtype == DType::BFloat16 ? Mkn{40, 32, 24} : Mkn{64, 128, 96};
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = gtl::testing::small_integers(a_shape(s, ta), gen, m.range, m.dtype);
        Tensor b = gtl::testing::small_integers(b_shape(s, tb), gen, m.range, m.dtype);
        EXPECT_EQ(matmul(a.to(kGpu), b.to(kGpu), ta, tb).to_vector(),
                  gtl::testing::reference_matmul(a, b, ta, tb).to_vector())
            << what(std::string(gtl::dtype_name(m.dtype)) + (m.tf32 ? " TF32" : "") +
                        " exact small integers",
                    s, ta, tb);
      }
  }
}

TEST(MatmulCuda, HalfTypesMatchCpu) {
  GTL_REQUIRE_GPU();
  Generator gen(32);
  for (DType dtype : {DType::Float16, DType::BFloat16})
    for (const Mkn& s : kShapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          Tensor a = Tensor::uniform(a_shape(s, ta), gen, -1.f, 1.f, dtype);
          Tensor b = Tensor::uniform(b_shape(s, tb), gen, -1.f, 1.f, dtype);
          const Tolerance tol =
              dtype == DType::Float16 ? Tolerance{1e-3, 0x1p-10} : Tolerance{1e-2, 0x1p-7};
          expect_close(matmul(a.to(kGpu), b.to(kGpu), ta, tb), matmul(a, b, ta, tb), tol,
                       what(gtl::dtype_name(dtype), s, ta, tb));
        }
}

TEST(MatmulCuda, OutAccumulatesOnANonDefaultStream) {
  GTL_REQUIRE_GPU();
  Generator gen(33);
  Tensor x = Tensor::uniform({19, 7}, gen, -1.f, 1.f);
  Tensor dy = Tensor::uniform({19, 5}, gen, -1.f, 1.f);
  Tensor dw = Tensor::uniform({7, 5}, gen, -1.f, 1.f);
  Tensor dw_gpu = dw.to(kGpu);
  matmul_out(x, dy, dw, true, false, 0.5f, 1.f);
  {
    // A second stream gets its own cuBLAS handle bound to it.
    gtl::StreamScope scope(gtl::Stream::create(kGpu));
    matmul_out(x.to(kGpu), dy.to(kGpu), dw_gpu, true, false, 0.5f, 1.f);
    gtl::current_stream().synchronize();
  }
  expect_close(dw_gpu, dw, Tolerance{1e-5, 1e-5},
               "dW += 0.5 x^T dy on a StreamScope stream vs the CPU");
}

TEST(MatmulCuda, EmptyInnerDimensionMatchesCpu) {
  GTL_REQUIRE_GPU();
  const Tensor a = Tensor::empty({3, 0}), b = Tensor::empty({0, 4});
  for (float beta : {0.f, 0.5f}) {
    Tensor c = Tensor::full({3, 4}, beta == 0.f ? NAN : 2.0);
    Tensor c_gpu = c.to(kGpu);
    matmul_out(a, b, c, false, false, 1.f, beta);
    matmul_out(a.to(kGpu), b.to(kGpu), c_gpu, false, false, 1.f, beta);
    expect_close(c_gpu, c, Tolerance{0, 0},
                 "K = 0 leaves beta * c (zeros for beta = 0, even over NaN), beta = " +
                     std::to_string(beta));
  }
}

TEST(MatmulCuda, MixedDevicesAreAnError) {
  GTL_REQUIRE_GPU();
  EXPECT_THROW(matmul(Tensor::zeros({2, 3}), Tensor::zeros({3, 4}, DType::Float32, kGpu)),
               gtl::Error)
      << "a on the CPU and b on the GPU must be refused at the door";
}

}  // namespace
