// fp16 and bf16 on the CPU must store and round exactly as a GPU does (round to nearest, ties to
// even), so that overflow to inf and underflow to 0 can be shown without a GPU (lab 03).
// The oracle below is independent of the code under test: it finds the nearest representable
// value by comparing distances in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gtl/tensor/half.h"
#include "gtl/tensor/philox.h"
#include "gtl/tensor/tensor.h"

namespace gtl {
namespace {

// All finite non-negative halves in increasing order, decoded with exact double arithmetic.
std::vector<double> positive_halves() {
  std::vector<double> v;
  for (uint32_t bits = 0; bits < 0x7c00; ++bits) {
    const uint32_t exp = bits >> 10, mant = bits & 0x3ff;
    v.push_back(exp == 0 ? std::ldexp(mant, -24)
                         : std::ldexp(1024 + mant, static_cast<int>(exp) - 25));
  }
  return v;
}

// Nearest half to x (x >= 0), ties to the even bit pattern; 0x7c00 (inf) past the rounding edge.
uint16_t oracle_half(double x, const std::vector<double>& halves) {
  const double max_half = 65504.0, edge = 65520.0;  // halfway to the next power of two
  if (x >= edge) return 0x7c00;
  if (x >= max_half) return 0x7bff;
  auto hi = std::lower_bound(halves.begin(), halves.end(), x);
  if (*hi == x) return static_cast<uint16_t>(hi - halves.begin());
  auto lo = hi - 1;
  const double dlo = x - *lo, dhi = *hi - x;
  uint16_t l = static_cast<uint16_t>(lo - halves.begin()), h = static_cast<uint16_t>(l + 1);
  if (dlo < dhi) return l;
  if (dhi < dlo) return h;
  return (l & 1) ? h : l;
}

TEST(Half, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = half_bits_to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(f)))) << "bits " << bits;
      continue;
    }
    ASSERT_EQ(float_to_half_bits(f), h)
        << "half 0x" << std::hex << bits << " -> " << f << " did not convert back to the same bits";
  }
}

TEST(Half, FloatToHalfRoundsToNearestEven) {
  const std::vector<double> halves = positive_halves();
  std::vector<float> inputs = {0.f,           1.f,           65504.f,       65519.99f,
                               65520.f,       1e6f,          5.9604645e-8f, 2.9802322e-8f,
                               2.9802326e-8f, 6.1035156e-5f, 6.1e-5f,       1.0004883f,
                               1.0009766f,    1.0014648f,    3.14159265f,   1e-4f};
  for (uint64_t i = 0; i < 200000; ++i) {  // random floats over the whole half range and beyond
    const float u = philox::uniform(7, i);
    inputs.push_back(std::ldexp(1.f + u, static_cast<int>(i % 44) - 28));
  }
  for (float f : inputs) {
    for (float x : {f, -f}) {
      const uint16_t expected =
          static_cast<uint16_t>(oracle_half(std::fabs(x), halves) | (std::signbit(x) ? 0x8000 : 0));
      ASSERT_EQ(float_to_half_bits(x), expected)
          << "float " << x << ": expected half bits 0x" << std::hex << expected << ", got 0x"
          << float_to_half_bits(x) << " (round to nearest, ties to even)";
    }
  }
}

TEST(Half, OverflowGoesToInfinityAndUnderflowToZero) {
  EXPECT_EQ(static_cast<float>(half(65504.f)), 65504.f) << "the largest finite half";
  EXPECT_TRUE(std::isinf(static_cast<float>(half(70000.f)))) << "fp16 overflows past 65504";
  EXPECT_EQ(static_cast<float>(half(1e-8f)), 0.f) << "fp16 underflows below ~3e-8";
  EXPECT_GT(static_cast<float>(half(1e-7f)), 0.f) << "1e-7 is a (subnormal) half";
  EXPECT_TRUE(std::isnan(static_cast<float>(half(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(static_cast<float>(half(1.f + 1e-4f)), 1.f)
      << "a small update to 1.0 vanishes in fp16: why optimizers keep float32 master weights";
}

TEST(BFloat16, RoundsToNearestEvenAndKeepsFloatRange) {
  for (uint64_t i = 0; i < 200000; ++i) {
    const float x = std::ldexp(philox::uniform(11, i) * 2.f - 1.f, static_cast<int>(i % 200) - 100);
    const uint32_t bits = float_bits(x);
    const float lo = bits_float(bits & 0xffff0000u);
    const float hi = bits_float((bits & 0xffff0000u) + 0x10000u);
    const double dlo = std::fabs(static_cast<double>(x) - lo),
                 dhi = std::fabs(hi - static_cast<double>(x));
    const float expected = dlo < dhi ? lo : dhi < dlo ? hi : ((bits >> 16) & 1 ? hi : lo);
    ASSERT_EQ(static_cast<float>(bfloat16(x)), expected) << "bfloat16(" << x << ")";
  }
  const float big = static_cast<float>(bfloat16(1e30f));
  EXPECT_TRUE(std::isfinite(big) && std::fabs(big - 1e30f) <= 1e30f / 256)
      << "bf16 keeps float32's range with 8 bits of precision: 1e30 -> " << big;
  EXPECT_TRUE(std::isinf(static_cast<float>(bfloat16(3.4e38f)))) << "rounds past the max to inf";
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Half, TensorConversionsRoundTheSameWay) {
  const Tensor x = Tensor::from_vector({1.f, 65504.f, 70000.f, 1e-8f, 1.0004883f, -3.f}, {6});
  const std::vector<float> h = x.to(DType::Float16).to(DType::Float32).to_vector();
  EXPECT_EQ(h[0], 1.f);
  EXPECT_EQ(h[1], 65504.f);
  EXPECT_TRUE(std::isinf(h[2])) << "70000 overflows fp16";
  EXPECT_EQ(h[3], 0.f) << "1e-8 underflows fp16";
  EXPECT_EQ(h[4], 1.f) << "1 + 2^-11 is a tie: rounds to even (1.0)";
  EXPECT_EQ(h[5], -3.f);
  const std::vector<float> b = x.to(DType::BFloat16).to(DType::Float32).to_vector();
  EXPECT_FALSE(std::isinf(b[2])) << "bf16 keeps float32's range";
}

}  // namespace
}  // namespace gtl
