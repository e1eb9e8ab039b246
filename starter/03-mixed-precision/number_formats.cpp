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
  // TODO(lab03) step 1a
  // Round x to the nearest fp16, ties to even, and return its 16 bits: sign (bit 15), exponent
  // (5 bits, bias 15), mantissa (10 bits). Cases: NaN -> a NaN (exponent 0x1f, mantissa != 0,
  // sign kept); +-inf and anything that rounds above 65504 -> +-inf (0x7c00); |x| < 2^-14 ->
  // a subnormal (exponent 0, value mantissa x 2^-24), rounded the same way, down to +-0.
  // Hint: take the float's bits (bits_of), its unbiased exponent e and its 24-bit mantissa with
  // the implicit 1. A normal fp16 keeps the top 11 of those 24 bits (shift out 13); each step of
  // e below -14 shifts out one more. Compare the bits shifted out with half of their range. For
  // a normal, the kept 11 bits still hold the implicit 1 at bit 10, which adds one to the
  // exponent field: ADD (e + 14) << 10 to them (a carry out of the mantissa then bumps the
  // exponent by itself, up to inf). Subnormals are the kept bits alone. About 20 lines.
  throw gtl::Error("TODO(lab03) step 1a: round_to_fp16(" + std::to_string(x) +
                   ") is not implemented");
  // END TODO(lab03)
}

uint16_t round_to_bf16(float x) {
  // TODO(lab03) step 1b
  // Round x to the nearest bf16 (the top 16 bits of a float32), ties to even; a NaN must stay a
  // NaN (a payload only in the low 16 bits would truncate to inf). Overflow to inf comes free.
  // Hint: add 0x7fff plus the lowest kept bit to the float's bits, then shift. About 5 lines.
  throw gtl::Error("TODO(lab03) step 1b: round_to_bf16(" + std::to_string(x) +
                   ") is not implemented");
  // END TODO(lab03)
}

UnderflowReport count_underflow(const Tensor& values) {
  GTL_CHECK(values.dtype() == DType::Float32 && !values.is_cuda(),
            "count_underflow: expected a float32 CPU tensor, got " << values.str(0));
  UnderflowReport report;
  // TODO(lab03) step 1c
  // For every non-zero finite element of `values`: count it in report.nonzero, and in
  // fp16_zeros / bf16_zeros when YOUR rounding makes it +0 or -0 (bits & 0x7fff == 0).
  // About 8 lines.
  throw gtl::Error("TODO(lab03) step 1c: count_underflow is not implemented");
  // END TODO(lab03)
  return report;
}

}  // namespace lab03
