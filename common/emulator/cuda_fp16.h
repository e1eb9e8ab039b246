// The emulator's cuda_fp16.h: CUDA's 16-bit float type __half (IEEE binary16) for kernels
// compiled as C++ (see cuda_emulator.h). A kernel that includes <cuda_fp16.h> gets the toolkit's
// header under nvcc and this one on the emulator, so it compiles unchanged under both.
//
// __half is two bytes of storage (size and alignment 2, trivially copyable, as on a GPU). Its
// conversions are the core's (gtl/tensor/half.h): round to nearest, ties to even, NaN kept,
// overflow to infinity, as __float2half_rn. Arithmetic and comparisons are computed in float and
// rounded back once: for add, subtract, multiply and divide that is the correctly rounded binary16
// result (float's 24 bits are at least 2 * 11 + 2, so the double rounding is harmless), what
// sm_80+ GPUs compute; __hfma rounds a * b + c once, as a fused multiply-add does.
//
// As in the toolkit, __half converts implicitly from and to float, so `h * 2.f` is ambiguous
// (write `h * __half(2.f)` or `__half2float(h) * 2.f`) under nvcc and here alike. Not emulated:
// __half2 and the other vector, math and conversion intrinsics.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "../gtl/tensor/half.h"

struct __half {
  __half() = default;
  __half(float f) : bits_(gtl::float_to_half_bits(f)) {}
  operator float() const { return gtl::half_bits_to_float(bits_); }

  friend unsigned short __half_as_ushort(__half h);
  friend __half __ushort_as_half(unsigned short bits);

 private:
  uint16_t bits_;
};

using half = __half;  // the toolkit's other name for it

// The bit pattern, as CUDA's __half_as_ushort and __ushort_as_half.
inline unsigned short __half_as_ushort(__half h) {
  return h.bits_;
}
inline __half __ushort_as_half(unsigned short bits) {
  __half h;
  h.bits_ = bits;
  return h;
}

inline __half __float2half(float f) {
  return __half(f);
}
inline __half __float2half_rn(float f) {
  return __half(f);
}
inline float __half2float(__half h) {
  return static_cast<float>(h);
}

inline __half __hadd(__half a, __half b) {
  return __half(float(a) + float(b));
}
inline __half __hsub(__half a, __half b) {
  return __half(float(a) - float(b));
}
inline __half __hmul(__half a, __half b) {
  return __half(float(a) * float(b));
}
inline __half __hdiv(__half a, __half b) {
  return __half(float(a) / float(b));
}
inline __half __hneg(__half a) {
  return __ushort_as_half(static_cast<unsigned short>(__half_as_ushort(a) ^ 0x8000u));
}
// a * b + c rounded once. In double the product is exact and the sum is exact or off only where
// the result is far from a binary16 rounding boundary; it goes to float rounding to odd (an
// inexact float gets an odd last bit), so that the rounding to binary16 is the one that counts.
inline __half __hfma(__half a, __half b, __half c) {
  const double sum = double(float(a)) * double(float(b)) + double(float(c));
  float f = static_cast<float>(sum);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (double(f) != sum && (bits & 1u) == 0) f = std::nextafter(f, sum > f ? INFINITY : -INFINITY);
  return __half(f);
}

inline __half operator+(__half a, __half b) {
  return __hadd(a, b);
}
inline __half operator-(__half a, __half b) {
  return __hsub(a, b);
}
inline __half operator*(__half a, __half b) {
  return __hmul(a, b);
}
inline __half operator/(__half a, __half b) {
  return __hdiv(a, b);
}
inline __half operator-(__half a) {
  return __hneg(a);
}
inline __half& operator+=(__half& a, __half b) {
  return a = a + b;
}
inline __half& operator-=(__half& a, __half b) {
  return a = a - b;
}
inline __half& operator*=(__half& a, __half b) {
  return a = a * b;
}
inline __half& operator/=(__half& a, __half b) {
  return a = a / b;
}
inline bool operator==(__half a, __half b) {
  return float(a) == float(b);
}
inline bool operator!=(__half a, __half b) {
  return float(a) != float(b);
}
inline bool operator<(__half a, __half b) {
  return float(a) < float(b);
}
inline bool operator<=(__half a, __half b) {
  return float(a) <= float(b);
}
inline bool operator>(__half a, __half b) {
  return float(a) > float(b);
}
inline bool operator>=(__half a, __half b) {
  return float(a) >= float(b);
}
