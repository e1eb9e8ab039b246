// Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
//
// A counter-based generator: the i-th number is a pure function of (key, counter), so any thread
// computes any element without shared state, and host and device code agree bit for bit.
// Element i of a draw uses counter block i / 4 and lane i % 4 (uniform); normals use Box-Muller
// on the lanes of block i / 2 of a subsequence of their own (kNormalSubsequence), so a normal draw
// and a uniform draw from one generator never read the same Philox output.
#pragma once

#include <cmath>
#include <cstdint>

#include "gtl/tensor/half.h"  // GTL_HOST_DEVICE

namespace gtl::philox {

struct U32x4 {
  uint32_t v[4];
};

GTL_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

// 10 rounds of Philox on a 128-bit counter (`counter` in the low words, `subsequence` above it)
// with a 64-bit key.
GTL_HOST_DEVICE inline U32x4 philox4x32(uint64_t counter, uint64_t key, uint32_t subsequence = 0) {
  uint32_t c0 = static_cast<uint32_t>(counter), c1 = static_cast<uint32_t>(counter >> 32);
  uint32_t c2 = subsequence, c3 = 0;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c0, hi0, lo0);
    mulhilo(0xCD9E8D57u, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0, c1 = n1, c2 = n2, c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return {{c0, c1, c2, c3}};
}

// A float in [0, 1) from the top 24 bits: exactly representable, identical on host and device.
GTL_HOST_DEVICE inline float to_unit_float(uint32_t x) {
  return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
}

GTL_HOST_DEVICE inline float uniform(uint64_t seed, uint64_t index) {
  return to_unit_float(philox4x32(index / 4, seed).v[index % 4]);
}

// low + (high - low) * u with the product rounded before the add, on host and device alike.
// nvcc would fuse them into one FMA (one rounding) and the GPU would differ from the CPU in the
// last bit; __fmul_rn is never fused, and the volatile keeps any host -ffp-contract from fusing.
GTL_HOST_DEVICE inline float to_range(float u, float low, float high) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(low, __fmul_rn(high - low, u));
#else
  const volatile float scaled = (high - low) * u;
  return low + scaled;
#endif
}

// Sets normal()'s counter blocks apart from uniform()'s. Without it, normal elements 2b and 2b+1
// would be computed from the very numbers that are uniform elements 4b and 4b+1 of the same key,
// and a normal draw followed by a uniform draw from one Generator would be correlated.
constexpr uint32_t kNormalSubsequence = 1;

// Standard normal via Box-Muller. log/sqrt/sin/cos may differ in the last bit between host libm
// and the GPU, so CPU and GPU normals agree to a few ulp, not bitwise (uniforms agree bitwise).
GTL_HOST_DEVICE inline float normal(uint64_t seed, uint64_t index) {
  const U32x4 r = philox4x32(index / 2, seed, kNormalSubsequence);
  const float u1 = 1.0f - to_unit_float(r.v[0]);  // in (0, 1]: log() stays finite
  const float u2 = to_unit_float(r.v[1]);
  const float radius = sqrtf(-2.0f * logf(u1));
  const float angle = 6.2831853071795864f * u2;
  return (index % 2 == 0) ? radius * cosf(angle) : radius * sinf(angle);
}

}  // namespace gtl::philox
