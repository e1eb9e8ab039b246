// The element types the emulated cuBLAS and cuDNN read and write, with their conversions to and
// from float: CUDA's cudaDataType_t (library_types.h, the same numeric values) and IEEE-754
// binary16 / bfloat16 bit patterns. Defined here rather than taken from the CUDA toolkit, so
// the emulated build compiles on machines without one.
//
// The binary16 and bfloat16 conversions are the core's (gtl/tensor/half.h, a plain header): they
// round to nearest, ties to even, as the GPU's __float2half_rn and __float2bfloat16_rn do; NaN
// stays NaN, overflow gives infinity. One copy, so the emulated libraries round exactly as the
// core's CPU path does.
#pragma once

#include <cstdint>
#include <cstring>

#include "../gtl/tensor/half.h"

typedef enum cudaDataType_t {
  CUDA_R_32F = 0,
  CUDA_R_64F = 1,
  CUDA_R_16F = 2,
  CUDA_R_16BF = 14,
} cudaDataType;

namespace emu {

using gtl::bfloat16_bits_to_float;
using gtl::float_to_bfloat16_bits;
using gtl::float_to_half_bits;
using gtl::half_bits_to_float;

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
