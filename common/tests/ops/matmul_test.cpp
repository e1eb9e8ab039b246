// ops::matmul on the CPU (OpenBLAS) against a double-precision triple loop.
//
// Tolerances (inputs uniform in [-1, 1], K <= 65):
//   float32            atol 1e-5 * K, rtol 1e-5: float32 sums of K products, rounded K times
//   float16 / bfloat16 checked against the reference of the *rounded* inputs; the op rounds its
//                      float32 result once, so the error is half an ulp of the output:
//                      rtol 2^-11 (fp16) / 2^-8 (bf16), doubled for the float32 sum's own error.
// The exact tests use small integers, whose products and sums float32 represents exactly
// (CUTLASS's trick): any difference at all is a bug, so they assert equality.
#include <string>
#include <vector>

#include "bitwise_diff.h"
#include "gemm_conv_reference.h"
#include "gtl/ops/math_mode.h"
#include "gtl/ops/matmul.h"
#include "gtl_test.h"

namespace {

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
using gtl::testing::reference_matmul;
using gtl::testing::Tolerance;

std::string what(const char* name, const Mkn& s, bool ta, bool tb) {
  return std::string(name) + " M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) +
         " N=" + std::to_string(s.n) + (ta ? " a^T" : " a") + (tb ? " b^T" : " b") +
         " (row-major operands through cblas_sgemm; check lda/ldb and the transpose flags)";
}

TEST(Matmul, Float32MatchesReferenceForAllTransposes) {
  Generator gen(1);
  for (const Mkn& s : kShapes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = Tensor::uniform(a_shape(s, ta), gen, -1.f, 1.f);
        Tensor b = Tensor::uniform(b_shape(s, tb), gen, -1.f, 1.f);
        expect_close(matmul(a, b, ta, tb), reference_matmul(a, b, ta, tb),
                     Tolerance{1e-5 * static_cast<double>(s.k), 1e-5}, what("fp32", s, ta, tb));
      }
}

TEST(Matmul, SmallIntegersAreExact) {
  Generator gen(2);
  for (const Mkn& s : {Mkn{1, 1, 1}, Mkn{3, 5, 7}, Mkn{17, 33, 65}, Mkn{64, 128, 96}})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = gtl::testing::small_integers(a_shape(s, ta), gen, 4);
        Tensor b = gtl::testing::small_integers(b_shape(s, tb), gen, 4);
        // |sum| <= 128 * 16 = 2048: every partial sum is an integer float32 holds exactly.
        EXPECT_EQ(matmul(a, b, ta, tb).to_vector(), reference_matmul(a, b, ta, tb).to_vector())
            << what("exact small integers", s, ta, tb);
      }
}

TEST(Matmul, HalfTypesRoundOnceLikeTheGpu) {
  Generator gen(3);
  struct Case {
    DType dtype;
    double rtol;
  };
  // Two half-ulps of the output type: one for the final rounding, one for slack.
  for (const Case& c : {Case{DType::Float16, 2 * 0x1p-11}, Case{DType::BFloat16, 2 * 0x1p-8}})
    for (const Mkn& s : kShapes)
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          Tensor a = Tensor::uniform(a_shape(s, ta), gen, -1.f, 1.f, c.dtype);
          Tensor b = Tensor::uniform(b_shape(s, tb), gen, -1.f, 1.f, c.dtype);
          Tensor out = matmul(a, b, ta, tb);
          ASSERT_EQ(out.dtype(), c.dtype) << "matmul returns its inputs' dtype";
          expect_close(out, reference_matmul(a, b, ta, tb), Tolerance{1e-3, c.rtol},
                       what(gtl::dtype_name(c.dtype), s, ta, tb));
        }
}

TEST(Matmul, HalfTypesSmallIntegersAreExact) {
  Generator gen(4);
  // |sum| <= 32 * 4 = 128: exact in fp16 (11 bits) and bf16 (8 bits) after the final rounding.
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    Tensor a = gtl::testing::small_integers({9, 32}, gen, 2, dtype);
    Tensor b = gtl::testing::small_integers({32, 13}, gen, 2, dtype);
    EXPECT_EQ(matmul(a, b).to_vector(), reference_matmul(a, b, false, false).to_vector())
        << gtl::dtype_name(dtype) << ": small integers must survive the float32 round trip";
  }
}

// Row-invariant mode (math_mode.h): row i of op(a) op(b) is the same bits whether op(a) has one
// row or 37, for every transpose and for the half types, and still the right product (alpha and
// beta included). A KV cache relies on it to decode exactly what a full forward computes.
TEST(Matmul, RowInvariantRowsDoNotDependOnTheRowCount) {
  const gtl::ops::ScopedRowInvariant row_invariant(true);
  Generator gen(7);
  const Mkn s{37, 45, 29};
  for (DType dtype : {DType::Float32, DType::BFloat16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Tensor a = Tensor::uniform(a_shape(s, ta), gen, -1.f, 1.f, dtype);
        Tensor b = Tensor::uniform(b_shape(s, tb), gen, -1.f, 1.f, dtype);
        Tensor full = matmul(a, b, ta, tb);
        expect_close(
            full, reference_matmul(a, b, ta, tb),
            Tolerance{1e-5 * static_cast<double>(s.k), dtype == DType::Float32 ? 1e-5 : 2 * 0x1p-8},
            what("row-invariant", s, ta, tb));
        const std::vector<float> av = a.to(DType::Float32).to_vector();
        const std::vector<float> fv = full.to(DType::Float32).to_vector();
        for (int64_t i = 0; i < s.m; ++i) {
          // Row i of op(a) alone: a row of a, or a column of a stored transposed.
          std::vector<float> row(static_cast<std::size_t>(s.k));
          for (int64_t l = 0; l < s.k; ++l)
            row[static_cast<std::size_t>(l)] =
                av[static_cast<std::size_t>(ta ? l * s.m + i : i * s.k + l)];
          Tensor one = Tensor::from_vector(row, ta ? Shape{s.k, 1} : Shape{1, s.k}).to(dtype);
          const std::vector<float> got = matmul(one, b, ta, tb).to(DType::Float32).to_vector();
          const std::vector<float> want(fv.begin() + i * s.n, fv.begin() + (i + 1) * s.n);
          ASSERT_EQ(gtl::testing::bitwise_diff(got, want), "")
              << gtl::dtype_name(dtype) << (ta ? " a^T" : " a") << (tb ? " b^T" : " b") << ": row "
              << i << " computed alone differs from the same row among " << s.m
              << " (row-invariant mode must compute every row with the same call)";
        }
      }
  Tensor x = Tensor::uniform({5, 6}, gen, -1.f, 1.f);
  Tensor w = Tensor::uniform({6, 4}, gen, -1.f, 1.f);
  Tensor c = Tensor::uniform({5, 4}, gen, -1.f, 1.f);
  const std::vector<float> start = c.to_vector(),
                           prod = reference_matmul(x, w, false, false).to_vector();
  matmul_out(x, w, c, false, false, 0.5f, 2.f);
  std::vector<float> expected(start.size());
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = 2.f * start[i] + 0.5f * prod[i];
  expect_close(c, Tensor::from_vector(expected, {5, 4}), Tolerance{1e-5, 1e-5},
               "row-invariant c = alpha a b + beta c");
}

TEST(Matmul, OutAccumulatesWithAlphaAndBeta) {
  Generator gen(5);
  // The weight-gradient pattern: dW += x^T dy, twice (two micro-batches).
  Tensor x = Tensor::uniform({19, 7}, gen, -1.f, 1.f);
  Tensor dy = Tensor::uniform({19, 5}, gen, -1.f, 1.f);
  Tensor dw = Tensor::uniform({7, 5}, gen, -1.f, 1.f);
  const std::vector<float> start = dw.to_vector();
  matmul_out(x, dy, dw, true, false, 1.f, 1.f);
  matmul_out(x, dy, dw, true, false, 0.5f, 1.f);
  const std::vector<float> prod = reference_matmul(x, dy, true, false).to_vector();
  std::vector<float> expected(start.size());
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = start[i] + 1.5f * prod[i];
  expect_close(dw, Tensor::from_vector(expected, {7, 5}), Tolerance{1e-5, 1e-5},
               "c = alpha op(a) op(b) + beta c, accumulated twice (gradient accumulation)");
}

TEST(Matmul, BetaZeroIgnoresGarbageInOutput) {
  Generator gen(6);
  Tensor a = Tensor::uniform({4, 6}, gen, -1.f, 1.f);
  Tensor b = Tensor::uniform({6, 3}, gen, -1.f, 1.f);
  Tensor c = Tensor::full({4, 3}, NAN);
  matmul_out(a, b, c, false, false, 1.f, 0.f);
  expect_close(c, reference_matmul(a, b, false, false), Tolerance{1e-5, 1e-5},
               "beta = 0 must overwrite c without reading it (BLAS semantics), even NaN");
}

TEST(Matmul, EmptyInnerDimensionGivesZeros) {
  Tensor a = Tensor::empty({3, 0});
  Tensor b = Tensor::empty({0, 4});
  expect_close(matmul(a, b), Tensor::zeros({3, 4}), Tolerance{0, 0},
               "an empty sum (K = 0) is zero");
}

// Runs f, expects a gtl::Error whose message contains every one of `parts`.
template <typename F>
void expect_error_naming(F f, const std::vector<std::string>& parts, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": expected a gtl::Error, nothing was thrown";
  } catch (const gtl::Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << what << ": the message should name " << p << ", got: " << e.what();
  }
}

TEST(Matmul, ShapeErrorsNameBothShapes) {
  expect_error_naming(
      [] {
        matmul(Tensor::zeros({3, 5}), Tensor::zeros({7, 4}));
      },
      {"[3, 5]", "[7, 4]"}, "inner dimensions 5 vs 7");
  expect_error_naming(
      [] {
        matmul(Tensor::zeros({3, 5}), Tensor::zeros({3, 4}), true, true);
      },
      {"[3, 5]", "[3, 4]"}, "a^T b^T: 3 vs 4");
  expect_error_naming(
      [] {
        matmul(Tensor::zeros({2, 3, 5}), Tensor::zeros({5, 4}));
      },
      {"[2, 3, 5]", "[5, 4]"}, "3-D operand");
  expect_error_naming(
      [] {
        matmul(Tensor::zeros({3, 5}), Tensor::zeros({5, 4}, DType::Float16));
      },
      {"float32", "float16"}, "mixed dtypes");
  expect_error_naming(
      [] {
        matmul(Tensor::zeros({3, 5}, DType::Int32), Tensor::zeros({5, 4}, DType::Int32));
      },
      {"int32"}, "integer matmul");
  expect_error_naming(
      [] {
        Tensor c = Tensor::zeros({4, 3});
        matmul_out(Tensor::zeros({3, 5}), Tensor::zeros({5, 4}), c);
      },
      {"[3, 4]", "[4, 3]"}, "output of the wrong shape");
}

}  // namespace
