// Lab 04, TODO 4: gradient accumulation over micro-batches.
#include "memory_lab.h"

namespace lab04 {

// SOLUTION(lab04) step 4: k forward/backward passes of b samples, summed, loss scaled 1/k.
float accumulate_gradients(gtl::nn::Module& model, const Tensor& images, const Tensor& labels,
                           int64_t micro_batches) {
  const int64_t n = images.size(0);
  GTL_CHECK(micro_batches >= 1 && n % micro_batches == 0,
            "accumulate_gradients: " << n << " samples do not split into " << micro_batches);
  const int64_t b = n / micro_batches;
  const float scale = 1.f / static_cast<float>(micro_batches);
  float loss = 0.f;
  for (int64_t i = 0; i < micro_batches; ++i) {
    const auto mode = i == 0 ? gtl::nn::GradMode::Overwrite : gtl::nn::GradMode::Accumulate;
    loss += forward_backward(model, images.slice(i * b, (i + 1) * b),
                             labels.slice(i * b, (i + 1) * b), scale, mode);
  }
  return loss * scale;
}
// END SOLUTION(lab04)

}  // namespace lab04
