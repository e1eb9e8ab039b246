// Lab 03, TODO 6: the recipe of each precision, and why bf16 needs no loss scaler.
//
// fp16 has 5 exponent bits: nothing below 2^-24 survives, and a gradient distribution spanning
// 1e-9 .. 1e-2 loses its tail, so fp16 needs the loss scaler. bf16 has float32's 8 exponent bits
// (down to ~1e-38 normal): the same gradients all survive, only with 8 bits of precision, so bf16
// trains with no scaler at all. Both keep float32 master weights: the updates are small next to
// the weights whatever the range (bf16, with fewer mantissa bits, loses them even sooner).
#include "mixed_precision.h"

namespace lab03 {

AmpRecipe amp_recipe(const std::string& precision) {
  // SOLUTION(lab03) step 6
  AmpRecipe r;
  if (precision == "fp32") return r;
  if (precision == "bf16") {
    r.policy = gtl::nn::PrecisionPolicy::bf16();
    r.master_weights = true;
    return r;
  }
  if (precision == "fp16") {
    r.policy = gtl::nn::PrecisionPolicy::fp16();
    r.loss_scaling = true;
    r.init_scale = 65536.f;
    r.master_weights = true;
    return r;
  }
  throw gtl::Error("amp_recipe: unknown precision '" + precision +
                   "': expected fp32, fp16 or bf16");
  // END SOLUTION(lab03)
}

}  // namespace lab03
