// 16-bit floats on the host, bit for bit as the GPU stores and rounds them.
//
//   half      IEEE fp16: 1 sign, 5 exponent, 10 mantissa bits. Max 65504; smallest normal
//             6.1e-5; subnormals down to 6.0e-8; anything smaller rounds to 0 (underflow).
//   bfloat16  the top 16 bits of a float32: float32's range, 8 bits of precision.
//
// Conversions from float round to nearest, ties to even, exactly like __float2half_rn and
// __float2bfloat16_rn, so the CPU backend shows the same fp16 overflow (to inf) and underflow
// (to 0) a GPU does: the reason mixed precision needs loss scaling (lab 03).
//
// These are plain structs holding the bits, usable from host and device code; CUDA kernels
// reinterpret them as __half / __nv_bfloat16, which have the same layout.
#pragma once

#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define GTL_HOST_DEVICE __host__ __device__
#else
#define GTL_HOST_DEVICE
#endif

namespace gtl {

GTL_HOST_DEVICE inline uint32_t float_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

GTL_HOST_DEVICE inline float bits_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

GTL_HOST_DEVICE inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan: keep nan a (quiet) nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds above 65504
  if (abs < 0x33000001u) return static_cast<uint16_t>(sign);  // at or below half the min subnormal
  const int exp = static_cast<int>(abs >> 23) - 127;
  uint32_t mant = (abs & 0x7fffffu) | 0x800000u;  // with the implicit leading 1
  // Normal halves keep 10 mantissa bits (shift 13); subnormals shift out more.
  const int shift = exp >= -14 ? 13 : 13 + (-14 - exp);
  const uint32_t halfway = 1u << (shift - 1);
  const uint32_t rest = mant & ((1u << shift) - 1);
  mant >>= shift;
  if (rest > halfway || (rest == halfway && (mant & 1u))) ++mant;  // ties to even
  // For normals, the exponent field is added on top; a mantissa carry correctly bumps it.
  const uint32_t bits = exp >= -14 ? ((static_cast<uint32_t>(exp + 14) << 10) + mant) : mant;
  return static_cast<uint16_t>(sign | bits);
}

GTL_HOST_DEVICE inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // inf / nan
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);  // +-0
  // Subnormal: value = mant * 2^-24, exact in float.
  return bits_float(sign) + (sign ? -1.f : 1.f) * static_cast<float>(mant) * 5.9604644775390625e-8f;
}

GTL_HOST_DEVICE inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // nan
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // ties to even
  return static_cast<uint16_t>((x + rounding) >> 16);
}

GTL_HOST_DEVICE inline float bfloat16_bits_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

struct half {
  uint16_t bits = 0;
  half() = default;
  GTL_HOST_DEVICE explicit half(float f) : bits(float_to_half_bits(f)) {}
  GTL_HOST_DEVICE explicit operator float() const { return half_bits_to_float(bits); }
  GTL_HOST_DEVICE static half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
};

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  GTL_HOST_DEVICE explicit bfloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  GTL_HOST_DEVICE explicit operator float() const { return bfloat16_bits_to_float(bits); }
  GTL_HOST_DEVICE static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

}  // namespace gtl
