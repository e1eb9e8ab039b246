// Activation checkpointing: the same gradients as the plain forward/backward, fewer bytes held
// between forward and backward (measured with the allocator's statistics), for all blocks or any
// subset (ModelConfig::checkpoint_blocks).
#include <map>
#include <string>
#include <vector>

#include "gtl/nn/activation_checkpoint.h"
#include "gtl/nn/models.h"
#include "gtl_test.h"

using namespace gtl;

namespace {

struct Measured {
  std::vector<std::vector<float>> grads;
  int64_t held_bytes = 0;  // allocated after forward (output + contexts) minus before
  int64_t context_bytes = 0;
};

Measured forward_backward(bool checkpoint, std::vector<int64_t> blocks = {}) {
  // A private allocator: its statistics count exactly this model's tensors.
  AllocatorScope scope(make_cpu_allocator());
  std::shared_ptr<Allocator> alloc = current_allocator(Device::cpu());
  nn::ModelConfig c;
  c.input = {1, 8, 8};
  c.hidden = 32;
  c.blocks = 4;
  c.checkpoint = checkpoint;
  c.checkpoint_blocks = std::move(blocks);
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

TEST(ActivationCheckpoint, SameGradientsFewerBytesHeld) {
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

namespace {
void expect_same_grads(const Measured& actual, const Measured& plain, const std::string& what) {
  ASSERT_EQ(actual.grads.size(), plain.grads.size());
  for (std::size_t i = 0; i < plain.grads.size(); ++i) {
    const std::string err = gtl::testing::compare(actual.grads[i], plain.grads[i], {0, 0});
    EXPECT_TRUE(err.empty()) << what << ", parameter " << i
                             << ": the gradient must be bitwise the plain model's: " << err;
  }
}
}  // namespace

// Any subset of blocks may be checkpointed; the gradients stay bitwise the plain model's.
TEST(ActivationCheckpoint, AnySubsetOfBlocksGivesTheSameGradients) {
  const Measured plain = forward_backward(false);
  expect_same_grads(forward_backward(false, {1}), plain, "checkpoint_blocks {1}");
  expect_same_grads(forward_backward(false, {0, 3}), plain, "checkpoint_blocks {0, 3}");
}

// Each block checkpointed drops its activations but its input: the bytes held between forward and
// backward (allocator) and the contexts' bytes fall strictly with every block added, and all four
// listed equal checkpoint = true.
TEST(ActivationCheckpoint, HeldBytesFallWithEveryCheckpointedBlock) {
  std::vector<int64_t> blocks;
  Measured previous = forward_backward(false);
  for (int64_t b = 0; b < 4; ++b) {
    blocks.push_back(b);
    const Measured now = forward_backward(false, blocks);
    EXPECT_LT(now.held_bytes, previous.held_bytes)
        << "checkpointing block " << b << " as well must hold fewer bytes: " << now.held_bytes
        << " B vs " << previous.held_bytes << " B with one block fewer";
    EXPECT_LT(now.context_bytes, previous.context_bytes) << "after adding block " << b;
    previous = now;
  }
  const Measured all = forward_backward(true);
  EXPECT_EQ(all.held_bytes, previous.held_bytes)
      << "checkpoint = true must mean every block, as checkpoint_blocks {0, 1, 2, 3}";
  EXPECT_EQ(all.context_bytes, previous.context_bytes);
}

// With checkpoint_blocks {1}, only block 1 (path "3", its residual block "3.segment") runs forward
// twice per step; every other module runs once. Counted with forward hooks.
TEST(ActivationCheckpoint, OnlyTheListedBlockIsRecomputed) {
  nn::ModelConfig c;
  c.input = {1, 4, 4};
  c.hidden = 8;
  c.blocks = 3;
  c.classes = 3;
  c.checkpoint_blocks = {1};
  auto model = nn::make_model(c);
  std::map<std::string, int> forwards;  // by path
  std::map<std::string, int> recomputed;
  nn::Hooks hooks;
  hooks.before_forward = [&](nn::Module& m) {
    ++forwards[m.path()];
    if (nn::in_recomputation()) ++recomputed[m.path()];
  };
  nn::HookHandle handle = model->add_hooks(hooks);
  Generator gen(7);
  for (int step = 1; step <= 2; ++step) {
    nn::Context ctx;
    Tensor y = model->forward(Tensor::normal({4, 1, 4, 4}, gen), ctx);
    model->backward(ctx, Tensor::normal(y.shape(), gen));
    for (const auto& [path, n] : forwards) {
      const bool in_block_1 = path.rfind("3.segment", 0) == 0;
      EXPECT_EQ(n, step * (in_block_1 ? 2 : 1))
          << "module '" << path << "' after " << step << " step(s): a module inside the "
          << "checkpointed block 1 runs forward twice per step, every other module once";
      EXPECT_EQ(recomputed[path], in_block_1 ? step : 0) << path;
    }
  }
  EXPECT_EQ(forwards.count("3.segment.fc1"), 1u) << "block 1 must sit at path 3.segment";
}

TEST(ActivationCheckpoint, ABlockIndexOutOfRangeIsAClearError) {
  nn::ModelConfig c;
  c.blocks = 2;
  c.checkpoint_blocks = {2};
  try {
    nn::make_model(c);
    FAIL() << "checkpoint_blocks {2} with 2 blocks must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint_blocks"), std::string::npos) << e.what();
  }
}
