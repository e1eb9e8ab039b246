// Activation checkpointing: the same gradients as the plain forward/backward, fewer bytes held
// between forward and backward (measured with the allocator's statistics).
#include "gtl/nn/models.h"
#include "gtl_test.h"

using namespace gtl;

namespace {

struct Measured {
  std::vector<std::vector<float>> grads;
  int64_t held_bytes = 0;  // allocated after forward (output + contexts) minus before
  int64_t context_bytes = 0;
};

Measured forward_backward(bool checkpoint) {
  // A private allocator: its statistics count exactly this model's tensors.
  AllocatorScope scope(make_cpu_allocator());
  std::shared_ptr<Allocator> alloc = current_allocator(Device::cpu());
  nn::ModelConfig c;
  c.input = {1, 8, 8};
  c.hidden = 32;
  c.blocks = 4;
  c.checkpoint = checkpoint;
  c.seed = 5;
  auto model = nn::make_model(c);
  Generator gen(6);
  Tensor x = Tensor::normal({64, 1, 8, 8}, gen);
  Tensor dy = Tensor::normal({64, 10}, gen);
  Measured run;
  const int64_t before = alloc->stats().allocated_bytes;
  nn::Context ctx;
  Tensor y = model->forward(x, ctx);
  run.held_bytes = alloc->stats().allocated_bytes - before;
  run.context_bytes = ctx.saved_bytes();
  model->backward(ctx, dy);
  for (const nn::ParamRef& p : model->parameters()) run.grads.push_back(p.grad.to_vector());
  return run;
}

}  // namespace

TEST(Checkpointed, SameGradientsFewerBytesHeld) {
  const Measured plain = forward_backward(false);
  const Measured ckpt = forward_backward(true);
  ASSERT_EQ(plain.grads.size(), ckpt.grads.size());
  for (std::size_t i = 0; i < plain.grads.size(); ++i) {
    // Recomputation repeats the same deterministic ops on the same inputs: bitwise equal.
    const std::string err = gtl::testing::compare(ckpt.grads[i], plain.grads[i], {0, 0});
    EXPECT_TRUE(err.empty()) << "parameter " << i << ": checkpointing changed the gradient "
                             << "(the recomputed forward must match the original): " << err;
  }
  // Per block and sample the plain run keeps LN's input and mean/rstd, fc1's input (32 floats
  // each) and fc2's and GELU's inputs (128 each): ~10 x 32 floats; checkpointed, only x.
  EXPECT_LT(ckpt.held_bytes, plain.held_bytes)
      << "checkpointing must hold fewer bytes between forward and backward";
  EXPECT_LT(2 * ckpt.held_bytes, plain.held_bytes)
      << "4 checkpointed blocks should hold well under half the plain activations: plain "
      << plain.held_bytes << " B, checkpointed " << ckpt.held_bytes << " B";
  EXPECT_LT(ckpt.context_bytes, plain.context_bytes);
}
