// Lab 04, TODO 7: the hungry loop fixed: the same logs and weights within one step's memory.
#include <gtest/gtest.h>

#include <string>

#include "memory_lab.h"

namespace {

using gtl::Tensor;

constexpr int64_t kBatch = 64;
constexpr int kSteps = 4;

// A model, its AdamW and kSteps batches, all in `allocator` (the fixed state of a loop).
struct LoopSetup {
  std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  lab04::ModelConfig config;
  std::unique_ptr<gtl::nn::Sequential> model;
  std::unique_ptr<gtl::optim::AdamW> adamw;
  std::vector<lab04::LabBatch> batches;
  LoopSetup() {
    const gtl::AllocatorScope scope(allocator);
    model = gtl::nn::make_model(config);
    adamw = std::make_unique<gtl::optim::AdamW>(model->parameters());
    for (int s = 0; s < kSteps; ++s) batches.push_back(lab04::make_batch(config, kBatch, 1 + s));
  }
  // Peak bytes above the fixed state while `f` runs in the allocator.
  template <typename F>
  int64_t peak_of(F f) {
    const gtl::AllocatorScope scope(allocator);
    allocator->reset_peak_stats();
    const int64_t before = allocator->stats().allocated_bytes;
    f();
    return allocator->stats().peak_allocated_bytes - before;
  }
  std::vector<std::vector<float>> weights() const {
    std::vector<std::vector<float>> out;
    for (const gtl::optim::ParamRef& p : model->parameters()) out.push_back(p.value.to_vector());
    return out;
  }
};

TEST(TrainingLoop, PeakStaysWithinOneStep) {
  LoopSetup reference, fixed;
  // The bound: one step as forward_backward + adamw.step() takes it, above the same fixed state.
  const int64_t one_step = reference.peak_of([&] {
    lab04::forward_backward(*reference.model, reference.batches[0].images,
                            reference.batches[0].labels);
    reference.adamw->step();
  });
  const int64_t loop =
      fixed.peak_of([&] { lab04::train_loop(*fixed.model, *fixed.adamw, fixed.batches); });
  const int64_t logits = 4 * kBatch * fixed.config.classes;
  EXPECT_LE(loop, one_step)
      << "TODO 7: over " << kSteps << " steps your loop peaked " << loop
      << " bytes above the model, AdamW and batches; one step needs " << one_step
      << " (bound). Over by " << (loop - one_step)
      << " bytes = " << double(loop - one_step) / logits << " x one batch's logits (" << logits
      << " B). A multiple of the logits: outputs kept (in a "
      << "list, or alive while backward runs); more: gradients copied and kept. Log each step "
         "as it happens and keep nothing across steps.";
}

TEST(TrainingLoop, ResultsAreBitwiseTheHungryLoops) {
  LoopSetup hungry, fixed;
  const lab04::LoopLog expected =
      lab04::hungry_train_loop(*hungry.model, *hungry.adamw, hungry.batches);
  lab04::LoopLog got;
  {
    const gtl::AllocatorScope scope(fixed.allocator);
    got = lab04::train_loop(*fixed.model, *fixed.adamw, fixed.batches);
  }
  ASSERT_EQ(got.losses.size(), std::size_t{kSteps}) << "TODO 7: one loss per step";
  ASSERT_EQ(got.correct.size(), std::size_t{kSteps}) << "TODO 7: one accuracy count per step";
  ASSERT_EQ(got.grad_norms.size(), std::size_t{kSteps}) << "TODO 7: one gradient norm per step";
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_EQ(got.losses[s], expected.losses[s]) << "TODO 7: step " << s << "'s loss";
    EXPECT_EQ(got.correct[s], expected.correct[s])
        << "TODO 7: step " << s << "'s correct count: from THIS step's logits, before the update";
    EXPECT_EQ(got.grad_norms[s], expected.grad_norms[s])
        << "TODO 7: step " << s << "'s gradient norm: of the gradients backward just wrote, "
        << "BEFORE adamw.step() (which does not change them, but the order is the log's)";
  }
  EXPECT_TRUE(fixed.weights() == hungry.weights())
      << "TODO 7: the final weights differ from the hungry loop's: the fix must run the same "
         "steps (forward, backward with GradMode::Overwrite and dloss 1, adamw.step()) in order";
}

}  // namespace
