// Lab 03, TODO 6: the recipe of each precision: which needs a loss scaler, which needs float32
// master weights, and why (the handout's objective 7).
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
