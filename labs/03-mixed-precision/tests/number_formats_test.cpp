// Lab 03, TODO 1: fp16 and bf16 rounding, bit for bit, and how many real gradients underflow.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "gtl/data/synthetic_digits.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/models.h"
#include "gtl/tensor/half.h"
#include "gtl_judge_output.h"
#include "lab03_cases.h"
#include "mixed_precision.h"

namespace {

std::string hex(uint32_t bits) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%04x", bits);
  return s;
}

struct Case {
  float x;
  uint16_t expected;
  const char* what;
};

// Edge values with the bits a GPU's __float2half_rn gives (worked by hand in the handout).
const Case kFp16Cases[] = {
    {0.f, 0x0000, "+0"},
    {-0.f, 0x8000, "-0 keeps its sign"},
    {1.f, 0x3c00, "1"},
    {-2.f, 0xc000, "-2"},
    {65504.f, 0x7bff, "max finite 65504"},
    {65519.f, 0x7bff, "65519 is below the midpoint 65520: rounds down to max finite"},
    {65520.f, 0x7c00, "65520, the tie between 65504 and 65536: ties to even = overflow to inf"},
    {1e6f, 0x7c00, "1e6 overflows to +inf (not max finite)"},
    {-1e6f, 0xfc00, "-1e6 overflows to -inf"},
    {std::numeric_limits<float>::infinity(), 0x7c00, "+inf"},
    {1.f + 0x1p-11f, 0x3c00, "1 + half an ulp: tie, round to even (down to 1)"},
    {1.f + 3 * 0x1p-11f, 0x3c02, "1 + 1.5 ulp: tie, round to even (up to 1 + 2 ulp)"},
    {1.f + 0x1p-11f + 0x1p-20f, 0x3c01, "just above the tie rounds up"},
    {0x1p-14f, 0x0400, "smallest normal 2^-14"},
    {0x1p-24f, 0x0001, "smallest subnormal 2^-24 (not flushed to zero)"},
    {0x1p-15f + 0x1p-24f, 0x0201, "a subnormal with a low bit"},
    {0x1p-25f, 0x0000, "2^-25, exactly half the smallest subnormal: tie, to even = 0"},
    {0x1p-25f + 0x1p-40f, 0x0001, "just above half the smallest subnormal rounds up"},
    {3 * 0x1p-25f, 0x0002, "1.5 x smallest subnormal: tie, to even (2)"},
    {-0x1p-26f, 0x8000, "a tiny negative underflows to -0"},
    {1e-8f, 0x0000, "1e-8 underflows to 0"},
    {0x1p-14f - 0x1p-25f, 0x0400, "rounds up from subnormal into the smallest normal"},
};

const Case kBf16Cases[] = {
    {0.f, 0x0000, "+0"},
    {-0.f, 0x8000, "-0 keeps its sign"},
    {1.f, 0x3f80, "1"},
    {1.f + 0x1p-8f, 0x3f80, "1 + half an ulp: tie, round to even (down)"},
    {1.f + 3 * 0x1p-8f, 0x3f82, "1 + 1.5 ulp: tie, round to even (up)"},
    {1.f + 0x1p-8f + 0x1p-20f, 0x3f81, "just above the tie rounds up"},
    {3.3895314e38f, 0x7f7f, "max finite bf16 (0x7f7f0000)"},
    {std::numeric_limits<float>::max(), 0x7f80, "float32 max rounds up to inf"},
    {-std::numeric_limits<float>::infinity(), 0xff80, "-inf"},
    {1e-8f, 0x322c, "1e-8 is an ordinary bf16 number (float32's range)"},
    {1e-40f, 0x0001, "a float32 subnormal stays a bf16 subnormal"},
    {-1e-45f, 0x8000, "the smallest float32 subnormal rounds to -0 (below half a bf16 ulp)"},
};

TEST(NumberFormats, Fp16RoundsEveryEdgeValueBitForBit) {
  for (const Case& c : kFp16Cases) {
    const uint16_t got = lab03::round_to_fp16(c.x);
    EXPECT_EQ(got, c.expected) << "TODO 1a: round_to_fp16(" << c.x << " = float bits "
                               << hex(gtl::float_bits(c.x)) << "): expected " << hex(c.expected)
                               << ", got " << hex(got) << " (" << c.what
                               << "). Revisit: round to nearest, ties to even; subnormals; "
                                  "overflow to inf.";
  }
}

TEST(NumberFormats, Bf16RoundsEveryEdgeValueBitForBit) {
  for (const Case& c : kBf16Cases) {
    const uint16_t got = lab03::round_to_bf16(c.x);
    EXPECT_EQ(got, c.expected) << "TODO 1b: round_to_bf16(" << c.x << " = float bits "
                               << hex(gtl::float_bits(c.x)) << "): expected " << hex(c.expected)
                               << ", got " << hex(got) << " (" << c.what
                               << "). Revisit: bf16 is the top half of float32, rounded to "
                                  "nearest even.";
  }
}

// NaNs of every kind: quiet, negative, a payload only in the low bits, all mantissa bits set.
const float kNans[] = {std::numeric_limits<float>::quiet_NaN(),
                       -std::numeric_limits<float>::quiet_NaN(), gtl::bits_float(0x7f800001u),
                       gtl::bits_float(0x7fffffffu)};

TEST(NumberFormats, Fp16NanStaysNan) {
  for (float x : kNans) {
    const uint16_t h = lab03::round_to_fp16(x);
    EXPECT_TRUE((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0)
        << "TODO 1a: float bits " << hex(gtl::float_bits(x)) << " is a NaN; fp16 " << hex(h)
        << " is not (exponent all ones AND a non-zero mantissa; all-zero mantissa is inf). A NaN "
           "that becomes inf hides the bug that made it.";
    EXPECT_EQ(h & 0x8000u, (gtl::float_bits(x) >> 16) & 0x8000u) << "TODO 1a: NaN's sign bit";
  }
}

TEST(NumberFormats, Bf16NanStaysNan) {
  for (float x : kNans) {
    const uint16_t b = lab03::round_to_bf16(x);
    EXPECT_TRUE((b & 0x7f80u) == 0x7f80u && (b & 0x007fu) != 0)
        << "TODO 1b: float bits " << hex(gtl::float_bits(x)) << " is a NaN; bf16 " << hex(b)
        << " is not: revisit what your rounding keeps of a NaN, and whether that is still a "
           "NaN (the bit layouts in the handout's format table).";
  }
}

// Every 4099th float32 bit pattern from a start drawn from the grading seed (all exponents, both
// signs): `round` must give the same bits as the core's `reference`, which matches
// __float2half_rn / __float2bfloat16_rn. What `round` computed goes to the judge under `test`.
template <typename Round, typename Reference>
void expect_sweep_agrees(const char* test, const char* todo, Round round, Reference reference) {
  int64_t bad = 0;
  uint32_t first = 0;
  std::vector<uint16_t> got;
  for (uint64_t u = lab03_cases::sweep_start(); u <= 0xffffffffull; u += 4099) {
    const float x = gtl::bits_float(static_cast<uint32_t>(u));
    if (std::isnan(x)) continue;  // NaN payloads may differ; the NanStaysNan tests check them
    got.push_back(round(x));
    if (got.back() != reference(x) && bad++ == 0) first = static_cast<uint32_t>(u);
  }
  gtl::judge::Outputs(test).record_digest(got.data(), got.size());
  EXPECT_EQ(bad, 0) << todo << ": " << bad << " patterns round differently, first float "
                    << gtl::bits_float(first) << " (bits " << hex(first) << "): expected "
                    << hex(reference(gtl::bits_float(first))) << ", got "
                    << hex(round(gtl::bits_float(first)));
}

TEST(NumberFormats, Fp16AgreesWithTheGpuRoundingOnASweepOfBitPatterns) {
  expect_sweep_agrees("NumberFormats.Fp16AgreesWithTheGpuRoundingOnASweepOfBitPatterns", "TODO 1a",
                      lab03::round_to_fp16, gtl::float_to_half_bits);
}

TEST(NumberFormats, Bf16AgreesWithTheGpuRoundingOnASweepOfBitPatterns) {
  expect_sweep_agrees("NumberFormats.Bf16AgreesWithTheGpuRoundingOnASweepOfBitPatterns", "TODO 1b",
                      lab03::round_to_bf16, gtl::float_to_bfloat16_bits);
}

// TODO 1 through the given count_underflow, which counts with your round_to_fp16 and round_to_bf16.
// The exact counts are the judge's (it counts with the core's rounding, which matches the GPU's);
// these tests record yours and hold the properties any right count has, whatever it is.
lab03::UnderflowReport count(const std::vector<float>& v) {
  return lab03::count_underflow(gtl::Tensor::from_vector(v, {static_cast<int64_t>(v.size())}));
}

void record(const char* test, const lab03::UnderflowReport& r) {
  gtl::judge::Outputs recorded(test);
  recorded.record(r.nonzero), recorded.record(r.fp16_zeros), recorded.record(r.bf16_zeros);
}

// "expected" is what another count of the same values gave: the two must agree.
void expect_same_count(const lab03::UnderflowReport& got, const lab03::UnderflowReport& expected,
                       const std::string& what) {
  EXPECT_TRUE(got.nonzero == expected.nonzero && got.fp16_zeros == expected.fp16_zeros &&
              got.bf16_zeros == expected.bf16_zeros)
      << "TODO 1 (your rounding via count_underflow): " << what << ": expected {nonzero "
      << expected.nonzero << ", fp16 " << expected.fp16_zeros << ", bf16 " << expected.bf16_zeros
      << "}, got {" << got.nonzero << ", " << got.fp16_zeros << ", " << got.bf16_zeros
      << "}. count_underflow is given: revisit which inputs your rounding (1a, 1b) turns into "
         "a zero, and whether it treats a value and its negation alike.";
}

TEST(Underflow, CountsOnARealGradientMatchTheGpuRounding) {
  const gtl::Tensor grad = lab03_cases::lab_model_gradient();
  const lab03::UnderflowReport r = lab03::count_underflow(grad);
  record("Underflow.CountsOnARealGradientMatchTheGpuRounding", r);
  EXPECT_TRUE(r.nonzero > 0 && r.nonzero <= grad.numel())
      << "TODO 1 (your rounding via count_underflow): " << r.nonzero << " elements examined of "
      << grad.numel();
  EXPECT_GT(r.fp16_zeros, r.bf16_zeros)
      << "TODO 1 (your rounding via count_underflow): the handout's worked example: at "
         "scale 1 the lab model's gradient loses more "
         "elements in fp16 (range down to 2^-24) than in bf16 (float32's range); you counted "
      << r.fp16_zeros << " in fp16 and " << r.bf16_zeros << " in bf16";
}

TEST(Underflow, ScaledValuesShowWhatTheLossScalerRescues) {
  const std::vector<float> v = lab03_cases::scaler_rescue_values();
  const lab03::UnderflowReport r = count(v);
  record("Underflow.ScaledValuesShowWhatTheLossScalerRescues", r);
  EXPECT_EQ(r.nonzero, 703)
      << "TODO 1 (your rounding via count_underflow): 704 values, one of them 0";
  EXPECT_GT(r.fp16_zeros, 0) << "TODO 1 (your rounding via count_underflow): values down "
                                "to 1e-9 lose some in fp16 (range table)";
  EXPECT_EQ(r.bf16_zeros, 0) << "TODO 1 (your rounding via count_underflow): bf16 has "
                                "float32's range: none of these underflow, you "
                                "counted "
                             << r.bf16_zeros;
  // The loss scaler's point: the same values times S. 2^4 rescues some, 2^16 lifts even 1e-9 to
  // 6.6e-5, above fp16's smallest normal 2^-14: nothing is lost.
  int64_t before = r.fp16_zeros;
  for (int k : {4, 16}) {
    std::vector<float> scaled;
    for (float x : v) scaled.push_back(std::ldexp(x, k));
    const lab03::UnderflowReport s = count(scaled);
    EXPECT_EQ(s.nonzero, 703) << "TODO 1 (your rounding via count_underflow): scaled by 2^" << k;
    EXPECT_LT(s.fp16_zeros, before) << "TODO 1 (your rounding via count_underflow): scaled by 2^"
                                    << k << ", expected fewer fp16 "
                                    << "zeros than " << before << ", got " << s.fp16_zeros;
    if (k == 16) {
      EXPECT_EQ(s.fp16_zeros, 0) << "TODO 1 (your rounding via count_underflow): scaled by "
                                    "2^16 every value is above 2^-14, got "
                                 << s.fp16_zeros << " fp16 zeros";
    }
    before = s.fp16_zeros;
  }
}

// Properties of any right count, on gradient-like values drawn from the grading seed: the exact
// counts go to the judge.
TEST(Underflow, SeededValuesMatchTheGpuRounding) {
  const std::vector<float> v = lab03_cases::seeded_underflow_values();
  const lab03::UnderflowReport r = count(v);
  record("Underflow.SeededValuesMatchTheGpuRounding", r);
  const std::string seed = " (" + gtl::test_seed::describe() + ")";
  std::vector<float> positive, negative, padded = v;
  for (float x : v) positive.push_back(std::fabs(x)), negative.push_back(-std::fabs(x));
  expect_same_count(
      count(negative), count(positive),
      "the seeded values made all negative, against the same made all positive" + seed);
  for (float x : {0.f, -0.f, INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN()})
    padded.push_back(x);
  expect_same_count(count(padded), r,
                    "the seeded values with +-0, +-inf and a NaN appended, against the same "
                    "values alone" +
                        seed);
  EXPECT_GT(r.fp16_zeros, r.bf16_zeros)
      << "TODO 1 (your rounding via count_underflow): values from 1e-12 to 1e-1" << seed;
  EXPECT_LT(r.nonzero, static_cast<int64_t>(v.size()))
      << "TODO 1 (your rounding via count_underflow): the seeded values hold zeros";
}

}  // namespace
