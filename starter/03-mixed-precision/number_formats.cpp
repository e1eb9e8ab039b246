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
  // Hint: work on the float's bits (bits_of): its sign, its exponent and its mantissa with the
  // implicit 1 made explicit. A normal fp16 keeps the top 11 bits of that mantissa, a subnormal
  // fewer (one fewer per binade below fp16's smallest normal). Round to nearest even by looking
  // at the bits you shift out: more than half of their range, less, or exactly half. If you
  // build the result by ADDING the exponent field to the rounded mantissa, a carry out of the
  // mantissa bumps the exponent by itself, which is correct by construction (even up to inf).
  // Do not open common/gtl/tensor/half.h before finishing TODO 1: it holds the core's answer.
  // Stuck? The handout has a collapsed "stuck on 1a?" section. About 20 lines.
  throw gtl::Error("TODO(lab03) step 1a: round_to_fp16(" + std::to_string(x) +
                   ") is not implemented");
  // END TODO(lab03)
}

uint16_t round_to_bf16(float x) {
  // TODO(lab03) step 1b
  // TODO 1, second part: round x to the nearest bf16, ties to even, under the header's contract
  // (NaN stays a NaN, too large -> inf, the sign of 0 kept). Before you reuse 1a's reasoning, ask
  // which float32 inputs your rounding would turn into a different class of number. About 5 lines.
  throw gtl::Error("TODO(lab03) step 1b: round_to_bf16(" + std::to_string(x) +
                   ") is not implemented");
  // END TODO(lab03)
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
