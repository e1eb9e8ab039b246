// Tests of the emulator's 16-bit float types (common/emulator/cuda_fp16.h, cuda_bf16.h): the same
// storage as on a GPU, conversions bit for bit the core's (gtl/tensor/half.h: round to nearest,
// ties to even, NaN kept, overflow to infinity) over every 16-bit value, the midpoints between
// neighbours and the values just beside them, and arithmetic rounded once: each result is the
// nearest 16-bit value to the exact one, found here by search.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "gtl/tensor/half.h"

namespace {

static_assert(sizeof(__half) == 2 && alignof(__half) == 2 && std::is_trivially_copyable_v<__half>);
static_assert(std::is_same_v<half, __half> && std::is_same_v<nv_bfloat16, __nv_bfloat16>);
static_assert(sizeof(__nv_bfloat16) == 2 && alignof(__nv_bfloat16) == 2 &&
              std::is_trivially_copyable_v<__nv_bfloat16>);

// One 16-bit type: its conversions, its bits, and the core's conversions to compare with.
struct Half {
  using T = __half;
  static T from_float(float f) { return __float2half_rn(f); }
  static T from_float_default(float f) { return __float2half(f); }
  static float to_float(T h) { return __half2float(h); }
  static uint16_t bits(T h) { return __half_as_ushort(h); }
  static T from_bits(uint16_t b) { return __ushort_as_half(b); }
  static uint16_t core_bits(float f) { return gtl::float_to_half_bits(f); }
  static float core_float(uint16_t b) { return gtl::half_bits_to_float(b); }
};
struct Bfloat16 {
  using T = __nv_bfloat16;
  static T from_float(float f) { return __float2bfloat16_rn(f); }
  static T from_float_default(float f) { return __float2bfloat16(f); }
  static float to_float(T h) { return __bfloat162float(h); }
  static uint16_t bits(T h) { return __bfloat16_as_ushort(h); }
  static T from_bits(uint16_t b) { return __ushort_as_bfloat16(b); }
  static uint16_t core_bits(float f) { return gtl::float_to_bfloat16_bits(f); }
  static float core_float(uint16_t b) { return gtl::bfloat16_bits_to_float(b); }
};

template <typename F>
class HalfTypes : public ::testing::Test {};
using Formats = ::testing::Types<Half, Bfloat16>;
TYPED_TEST_SUITE(HalfTypes, Formats);

// Floats that exercise the rounding: every 16-bit value, the midpoint between it and the next
// (a tie: it must go to the even one), and the floats just below and above that midpoint;
// with zeros, subnormals, overflow and NaN among them.
template <typename F>
std::vector<float> sweep() {
  std::vector<float> v;
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float x = F::core_float(static_cast<uint16_t>(b));
    v.push_back(x);
    const float next = F::core_float(static_cast<uint16_t>(b + 1));
    if (std::isfinite(x) && std::isfinite(next) && (b & 0x7fff) != 0x7fff) {
      const float mid = x + (next - x) / 2;
      v.push_back(mid);
      v.push_back(std::nextafter(mid, 0.f));
      v.push_back(std::nextafter(mid, std::copysign(INFINITY, mid)));
    }
  }
  for (float x : {1e9f, -1e9f, 65519.f, 65520.f, 3.4e38f, 1e-30f, -1e-30f, INFINITY,
                  std::numeric_limits<float>::quiet_NaN()})
    v.push_back(x);
  return v;
}

TYPED_TEST(HalfTypes, ConversionsAreTheCoresBitForBit) {
  using F = TypeParam;
  int bad = 0;
  for (float x : sweep<F>()) {
    const uint16_t want = F::core_bits(x);
    if (F::bits(F::from_float(x)) != want || F::bits(F::from_float_default(x)) != want ||
        F::bits(typename F::T(x)) != want) {
      if (bad++ < 5)
        ADD_FAILURE() << "float " << x << ": got " << F::bits(F::from_float(x)) << ", want "
                      << want;
    }
  }
  EXPECT_EQ(bad, 0);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float want = F::core_float(static_cast<uint16_t>(b)),
                got = F::to_float(F::from_bits(static_cast<uint16_t>(b)));
    if (std::memcmp(&want, &got, 4) != 0 && bad++ < 5)
      ADD_FAILURE() << "bits " << b << ": got " << got << ", want " << want;
  }
  EXPECT_EQ(bad, 0);
}

// Known values, so that a wrong core would not pass by agreeing with itself.
TEST(HalfTypes, KnownRoundings) {
  EXPECT_EQ(__half_as_ushort(__float2half_rn(1.f + 0x1p-11f)), 0x3c00) << "tie: to even (1.0)";
  EXPECT_EQ(__half_as_ushort(__float2half_rn(1.f + 3 * 0x1p-11f)), 0x3c02) << "tie: to even";
  EXPECT_EQ(__half_as_ushort(__float2half_rn(0x1p-24f)), 0x0001) << "smallest subnormal";
  EXPECT_EQ(__half_as_ushort(__float2half_rn(0x1p-25f)), 0x0000) << "tie at half of it: to 0";
  EXPECT_EQ(__half_as_ushort(__float2half_rn(65519.f)), 0x7bff) << "65504, the largest half";
  EXPECT_EQ(__half_as_ushort(__float2half_rn(65520.f)), 0x7c00) << "overflow to infinity";
  EXPECT_TRUE(std::isnan(__half2float(__float2half_rn(NAN))));
  EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(1.f + 0x1p-8f)), 0x3f80) << "tie: to even";
  EXPECT_EQ(__bfloat16_as_ushort(__float2bfloat16_rn(1.f + 3 * 0x1p-8f)), 0x3f82) << "tie: to even";
  EXPECT_TRUE(std::isnan(__bfloat162float(__float2bfloat16_rn(NAN))));
}

// The 16-bit value nearest to x (ties to even), by search among the neighbours of a guess: the
// reference for arithmetic rounded once. x is the exact result, held in a double.
template <typename F>
uint16_t nearest(double x) {
  if (std::isnan(x)) return F::core_bits(NAN);
  const uint16_t guess = F::core_bits(static_cast<float>(x));
  if (!std::isfinite(F::core_float(guess))) return guess;  // overflow
  uint16_t best = guess;
  for (int d : {-1, 1}) {
    const uint16_t c = static_cast<uint16_t>(guess + d);
    const double dc = std::fabs(double(F::core_float(c)) - x),
                 db = std::fabs(double(F::core_float(best)) - x);
    if (std::isfinite(F::core_float(c)) && (dc < db || (dc == db && (c & 1) == 0))) best = c;
  }
  return best;
}

// +, -, *, / and the __h* functions on random pairs (finite, results in range): the nearest value
// to the exact result. Sums and products of 16-bit values are exact in a double; quotients are not,
// but land far enough from a tie.
TYPED_TEST(HalfTypes, ArithmeticIsRoundedOnce) {
  using F = TypeParam;
  using T = typename F::T;
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> dist(-100.f, 100.f);
  int bad = 0;
  for (int i = 0; i < 20000; ++i) {
    const T a = F::from_float(dist(gen)), b = F::from_float(dist(gen));
    const double x = F::to_float(a), y = F::to_float(b);
    const struct {
      T got, alt;
      double exact;
      const char* op;
    } cases[] = {{a + b, __hadd(a, b), x + y, "+"},
                 {a - b, __hsub(a, b), x - y, "-"},
                 {a * b, __hmul(a, b), x * y, "*"},
                 {a / b, __hdiv(a, b), x / y, "/"}};
    for (const auto& c : cases)
      if ((F::bits(c.got) != nearest<F>(c.exact) || F::bits(c.alt) != F::bits(c.got)) && bad++ < 5)
        ADD_FAILURE() << x << " " << c.op << " " << y << ": got " << F::to_float(c.got) << ", want "
                      << F::core_float(nearest<F>(c.exact));
  }
  EXPECT_EQ(bad, 0);
}

TYPED_TEST(HalfTypes, ComparisonsAndCompoundAssignment) {
  using F = TypeParam;
  using T = typename F::T;
  const T one = F::from_float(1.f), two = F::from_float(2.f), nan = F::from_float(NAN);
  EXPECT_TRUE(one < two && one <= two && two > one && two >= one && one != two && one == one);
  EXPECT_FALSE(nan == nan || nan < one || nan > one || nan <= nan || nan >= nan);
  EXPECT_TRUE(nan != nan) << "unordered: != is true, as CUDA's __hneu";
  T x = one;
  x += two;
  x *= two;
  x -= one;
  x /= two;
  EXPECT_EQ(F::to_float(x), 2.5f);
  EXPECT_EQ(F::to_float(-x), -2.5f);
}

// __hfma rounds a * b + c once. 1.5 * (683 / 1024) = 2049 / 2048 is a tie between 1 and
// 1 + 2^-10; adding 2^-24 (the smallest subnormal) breaks it upwards. Rounding the sum to float
// first (whose last bit at 1 is 2^-23) would bring back the tie, and round it down to 1.
TEST(HalfTypes, HalfFmaRoundsOnce) {
  const __half a = __float2half_rn(1.5f), b = __float2half_rn(683.f / 1024),
               c = __float2half_rn(0x1p-24f);
  EXPECT_EQ(__half2float(__hfma(a, b, c)), 1.f + 0x1p-10f);
  EXPECT_EQ(__half2float(__hfma(a, b, -c)), 1.f) << "the tie broken downwards";
  std::mt19937 gen(12);
  std::uniform_real_distribution<float> dist(-30.f, 30.f);
  int bad = 0;
  for (int i = 0; i < 20000; ++i) {
    const __half x = __float2half_rn(dist(gen)), y = __float2half_rn(dist(gen)),
                 z = __float2half_rn(dist(gen));
    const double exact = double(__half2float(x)) * __half2float(y) + __half2float(z);
    if (__half_as_ushort(__hfma(x, y, z)) != nearest<Half>(exact) && bad++ < 5)
      ADD_FAILURE() << __half2float(x) << " * " << __half2float(y) << " + " << __half2float(z);
  }
  EXPECT_EQ(bad, 0);
}

}  // namespace
