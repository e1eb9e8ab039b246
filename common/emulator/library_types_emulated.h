// The element types the emulated cuBLAS and cuDNN read and write, with their conversions to and
// from float: CUDA's cudaDataType_t (library_types.h, the same numeric values) and IEEE-754
// binary16 / bfloat16 bit patterns. Defined here rather than taken from the CUDA toolkit, so
// the emulated build compiles on machines without one.
//
// Conversions round to nearest, ties to even, as the GPU's __float2half_rn and
// __float2bfloat16_rn do; NaN stays NaN, overflow gives infinity.
#pragma once

#include <cstdint>
#include <cstring>

typedef enum cudaDataType_t {
  CUDA_R_32F = 0,
  CUDA_R_64F = 1,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
} cudaDataType;

namespace emu {

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);  // inf or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // signed zero
  } else {        // subnormal: mantissa * 2^-24, exact in float
    float f = static_cast<float>(mantissa) * 0x1p-24f;
    std::memcpy(&bits, &f, 4);
    bits |= sign;
  }
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

inline uint16_t float_to_half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {  // below 2^-14: a half subnormal (or zero), a multiple of 2^-24
    float a;
    std::memcpy(&a, &abs, 4);
    const float scaled = a * 0x1p24f;  // exact; the integer part is the mantissa
    uint32_t m = static_cast<uint32_t>(scaled);
    const float rest = scaled - static_cast<float>(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  // Normal: drop 13 mantissa bits, rounding to nearest even (a carry may bump the exponent).
  const uint32_t rebased = abs - (112u << 23);
  const uint32_t lsb = (rebased >> 13) & 1u;
  return static_cast<uint16_t>(sign | ((rebased + 0xfffu + lsb) >> 13));
}

inline float bfloat16_bits_to_float(uint16_t b) {
  const uint32_t bits = uint32_t{b} << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + lsb) >> 16);
}

// x rounded to TF32 (8 exponent bits, 10 mantissa bits), to nearest even; inf and NaN kept: the
// inputs of a float32 GEMM or convolution that a library computes on tensor cores.
inline float to_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) != 0x7f800000u) {
    const uint32_t lsb = (bits >> 13) & 1u;
    bits = (bits + 0xfffu + lsb) & ~uint32_t{0x1fff};
  }
  std::memcpy(&x, &bits, 4);
  return x;
}

// Element i of an array of `type`, as float; and the store of a float into it.
inline float load_as_float(const void* p, cudaDataType_t type, int64_t i) {
  switch (type) {
    case CUDA_R_16F:
      return half_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_16BF:
      return bfloat16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_64F:
      return static_cast<float>(static_cast<const double*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

inline void store_float(void* p, cudaDataType_t type, int64_t i, float v) {
  switch (type) {
    case CUDA_R_16F:
      static_cast<uint16_t*>(p)[i] = float_to_half_bits(v);
      break;
    case CUDA_R_16BF:
      static_cast<uint16_t*>(p)[i] = float_to_bfloat16_bits(v);
      break;
    case CUDA_R_64F:
      static_cast<double*>(p)[i] = v;
      break;
    default:
      static_cast<float*>(p)[i] = v;
  }
}

}  // namespace emu
