// Lab 04, TODO 5: activation checkpointing of segments of the lab model.
#include <cmath>

#include "gtl/nn/sequential.h"
#include "memory_lab.h"

namespace lab04 {

Checkpoint::Checkpoint(std::unique_ptr<gtl::nn::Module> segment) : Module("checkpoint") {
  add_child("segment", std::move(segment));
}

// SOLUTION(lab04) step 5a: the Checkpoint module and the model built from it.
Tensor Checkpoint::forward_impl(const Tensor& x, gtl::nn::Context& ctx) {
  gtl::nn::Context dropped;  // the segment's activations: released when this returns
  Tensor y = children_.front()->forward(x, dropped);
  ctx.saved = {x};
  return y;
}

Tensor Checkpoint::backward_impl(gtl::nn::Context& ctx, const Tensor& dy, gtl::nn::GradMode mode) {
  gtl::nn::Context recomputed;
  children_.front()->forward(ctx.saved.front(), recomputed);
  ctx.saved.clear();
  return children_.front()->backward(recomputed, dy, mode);
}

std::unique_ptr<gtl::nn::Sequential> make_checkpointed_model(const ModelConfig& config,
                                                             int64_t every) {
  GTL_CHECK(
      config.kind == "mlp" && every >= 0,
      "make_checkpointed_model: the lab MLP and every >= 0, got " << config.kind << ", " << every);
  auto model = std::make_unique<gtl::nn::Sequential>();
  const int64_t first_block = 2, end_blocks = 2 + config.blocks;
  model->add(gtl::nn::make_stage(config, 0, first_block));
  if (every == 0) {
    if (config.blocks > 0) model->add(gtl::nn::make_stage(config, first_block, end_blocks));
  } else {
    for (int64_t b = first_block; b < end_blocks; b += every) {
      const int64_t e = std::min(b + every, end_blocks);
      model->add(std::make_unique<Checkpoint>(gtl::nn::make_stage(config, b, e)));
    }
  }
  model->add(gtl::nn::make_stage(config, end_blocks, gtl::nn::num_layers(config)));
  return model;
}
// END SOLUTION(lab04)

// SOLUTION(lab04) step 5b: the sqrt(L) policy.
int64_t sqrt_segment_length(int64_t blocks) {
  GTL_CHECK(blocks >= 1, "sqrt_segment_length: blocks >= 1, got " << blocks);
  // ceil(L/k) + k >= k: past the best cost found, no longer length can beat it.
  int64_t best = 1, best_cost = blocks + 1;
  for (int64_t k = 2; k <= blocks && k < best_cost; ++k) {
    const int64_t cost = (blocks + k - 1) / k + k;
    if (cost < best_cost) best = k, best_cost = cost;
  }
  return best;
}
// END SOLUTION(lab04)

}  // namespace lab04
