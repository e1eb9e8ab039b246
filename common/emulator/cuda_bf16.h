// The emulator's cuda_bf16.h: CUDA's 16-bit float type __nv_bfloat16 (bfloat16: float32's top 16
// bits) for kernels compiled as C++ (see cuda_emulator.h). A kernel that includes <cuda_bf16.h>
// gets the toolkit's header under nvcc and this one on the emulator, so it compiles unchanged under
// both.
//
// __nv_bfloat16 is two bytes of storage (size and alignment 2, trivially copyable, as on a GPU).
// Its conversions are the core's (gtl/tensor/half.h): round to nearest, ties to even, NaN kept,
// as __float2bfloat16_rn. Arithmetic and comparisons are computed in float and rounded back once:
// for add, subtract, multiply and divide that is the correctly rounded bfloat16 result (float's
// 24 bits are at least 2 * 8 + 2, so the double rounding is harmless), what sm_80+ GPUs compute.
//
// As in the toolkit, __nv_bfloat16 converts implicitly from and to float, so `h * 2.f` is
// ambiguous (write `h * __nv_bfloat16(2.f)` or `__bfloat162float(h) * 2.f`) under nvcc and here
// alike. Not emulated: __hfma (its one rounding over bfloat16's range needs more than a double),
// __nv_bfloat162 and the other vector, math and conversion intrinsics.
#pragma once

#include <cstdint>

#include "../gtl/tensor/half.h"

struct __nv_bfloat16 {
  __nv_bfloat16() = default;
  __nv_bfloat16(float f) : bits_(gtl::float_to_bfloat16_bits(f)) {}
  operator float() const { return gtl::bfloat16_bits_to_float(bits_); }

  friend unsigned short __bfloat16_as_ushort(__nv_bfloat16 h);
  friend __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits);

 private:
  uint16_t bits_;
};

using nv_bfloat16 = __nv_bfloat16;  // the toolkit's other name for it

// The bit pattern, as CUDA's __bfloat16_as_ushort and __ushort_as_bfloat16.
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) {
  return h.bits_;
}
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) {
  __nv_bfloat16 h;
  h.bits_ = bits;
  return h;
}

inline __nv_bfloat16 __float2bfloat16(float f) {
  return __nv_bfloat16(f);
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  return __nv_bfloat16(f);
}
inline float __bfloat162float(__nv_bfloat16 h) {
  return static_cast<float>(h);
}

inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) + float(b));
}
inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) - float(b));
}
inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) * float(b));
}
inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __nv_bfloat16(float(a) / float(b));
}
inline __nv_bfloat16 __hneg(__nv_bfloat16 a) {
  return __ushort_as_bfloat16(static_cast<unsigned short>(__bfloat16_as_ushort(a) ^ 0x8000u));
}

inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __hadd(a, b);
}
inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __hsub(a, b);
}
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __hmul(a, b);
}
inline __nv_bfloat16 operator/(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __hdiv(a, b);
}
inline __nv_bfloat16 operator-(__nv_bfloat16 a) {
  return __hneg(a);
}
inline __nv_bfloat16& operator+=(__nv_bfloat16& a, __nv_bfloat16 b) {
  return a = a + b;
}
inline __nv_bfloat16& operator-=(__nv_bfloat16& a, __nv_bfloat16 b) {
  return a = a - b;
}
inline __nv_bfloat16& operator*=(__nv_bfloat16& a, __nv_bfloat16 b) {
  return a = a * b;
}
inline __nv_bfloat16& operator/=(__nv_bfloat16& a, __nv_bfloat16 b) {
  return a = a / b;
}
inline bool operator==(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) == float(b);
}
inline bool operator!=(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) != float(b);
}
inline bool operator<(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) < float(b);
}
inline bool operator<=(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) <= float(b);
}
inline bool operator>(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) > float(b);
}
inline bool operator>=(__nv_bfloat16 a, __nv_bfloat16 b) {
  return float(a) >= float(b);
}
