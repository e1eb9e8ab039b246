// Lab 03, TODO 1: fp16 and bf16 by hand.
//
// A float32 is 1 sign bit, 8 exponent bits (bias 127) and 23 mantissa bits. fp16 keeps 5 exponent
// bits (bias 15) and 10 mantissa bits; bf16 keeps float32's 8 exponent bits and 7 mantissa bits,
// so bf16 is float32's top half and rounding to it only has to round the low 16 bits away.
// Round to nearest, ties to even: look at the bits shifted out; above half an ulp round up, below
// round down, exactly half round to the neighbour whose last kept bit is 0.
#include <cmath>
#include <cstring>

#include "mixed_precision.h"

namespace lab03 {

namespace {
[[maybe_unused]] uint32_t bits_of(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
}  // namespace

uint16_t round_to_fp16(float x) {
  // SOLUTION(lab03) step 1a
  const uint32_t u = bits_of(x);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN stays a (quiet) NaN
  if (abs == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // +-inf
  const int exponent = static_cast<int>(abs >> 23) - 127;                // unbiased
  if (exponent > 15) return static_cast<uint16_t>(sign | 0x7c00u);       // beyond fp16: inf
  const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;               // with the implicit 1
  // Normal fp16 keeps 10 of the 23 mantissa bits; below 2^-14 (subnormal) each step down in
  // exponent shifts out one more bit. Past 24 + 1 bits everything is shifted out.
  const int shift = exponent >= -14 ? 13 : 13 + (-14 - exponent);
  if (shift > 24) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
  uint32_t kept = mantissa >> shift;
  const uint32_t rest = mantissa & ((1u << shift) - 1u), half_ulp = 1u << (shift - 1);
  if (rest > half_ulp || (rest == half_ulp && (kept & 1u))) ++kept;  // ties to even
  // Normals add the biased exponent on top of the 10 fraction bits (the implicit 1 is bit 10 of
  // `kept`, hence exponent + 14). A carry out of the mantissa bumps the exponent, up to inf.
  const uint32_t bits =
      exponent >= -14 ? (static_cast<uint32_t>(exponent + 14) << 10) + kept : kept;
  return static_cast<uint16_t>(sign | bits);
  // END SOLUTION(lab03)
}

uint16_t round_to_bf16(float x) {
  // SOLUTION(lab03) step 1b
  const uint32_t u = bits_of(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
  // Adding 0x7fff (+1 when the kept last bit is odd) carries into bit 16 exactly when the low
  // half is above one half, or equal to it with an odd kept part: ties to even. A carry out of
  // the mantissa bumps the exponent (max finite rounds to inf).
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
  // END SOLUTION(lab03)
}

UnderflowReport count_underflow(const Tensor& values) {
  GTL_CHECK(values.dtype() == DType::Float32 && !values.is_cuda(),
            "count_underflow: expected a float32 CPU tensor, got " << values.str(0));
  // Given: the count of "Why gradients underflow", made with YOUR rounding (1a, 1b), so the
  // Underflow.* tests grade it on a real gradient. A rounded zero may be -0: the mask drops the
  // sign.
  UnderflowReport report;
  const float* v = values.data<float>();
  for (int64_t i = 0; i < values.numel(); ++i) {
    if (v[i] == 0.f || !std::isfinite(v[i])) continue;
    ++report.nonzero;
    if ((round_to_fp16(v[i]) & 0x7fffu) == 0) ++report.fp16_zeros;
    if ((round_to_bf16(v[i]) & 0x7fffu) == 0) ++report.bf16_zeros;
  }
  return report;
}

}  // namespace lab03
