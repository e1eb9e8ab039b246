// Lab 04, TODO 4: gradient accumulation over micro-batches.
#include "memory_lab.h"

namespace lab04 {

// SOLUTION(lab04) step 4: k forward/backward passes, each part's mean loss weighted b_i / n.
float accumulate_gradients(gtl::nn::Module& model, const Tensor& images, const Tensor& labels,
                           int64_t micro_batches) {
  const int64_t n = images.size(0);
  GTL_CHECK(micro_batches >= 1 && micro_batches <= n,
            "accumulate_gradients: " << n << " samples do not split into " << micro_batches);
  float loss = 0.f;
  for (int64_t i = 0; i < micro_batches; ++i) {
    // Part i: [i*n/k, (i+1)*n/k), sizes differing by at most one; the whole batch's mean loss
    // is the sum of the parts' means, each weighted by its share of the samples.
    const int64_t begin = i * n / micro_batches, end = (i + 1) * n / micro_batches;
    const float weight = static_cast<float>(end - begin) / static_cast<float>(n);
    const auto mode = i == 0 ? gtl::nn::GradMode::Overwrite : gtl::nn::GradMode::Accumulate;
    loss += weight * forward_backward(model, images.slice(begin, end), labels.slice(begin, end),
                                      weight, mode);
  }
  return loss;
}
// END SOLUTION(lab04)

}  // namespace lab04
