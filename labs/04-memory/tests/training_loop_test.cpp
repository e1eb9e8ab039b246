// Lab 04, TODO 7: the hungry loop fixed: the same logs and weights within one step's memory.
#include <gtest/gtest.h>

#include <string>

#include "gtl_judge_output.h"
#include "lab04_cases.h"
#include "memory_lab.h"

namespace {

using lab04_cases::LoopSetup;
constexpr int kSteps = lab04_cases::kLoopSteps;

TEST(TrainingLoop, PeakStaysWithinOneStep) {
  LoopSetup reference, fixed;
  // The bound: one step as forward_backward + adamw.step() takes it, above the same fixed state.
  const int64_t one_step = reference.one_step_peak();
  const int64_t loop =
      fixed.peak_of([&] { lab04::train_loop(*fixed.model, *fixed.adamw, fixed.batches); });
  gtl::judge::Outputs("TrainingLoop.PeakStaysWithinOneStep").record(loop);
  EXPECT_LE(loop, one_step)
      << "TODO 7: over " << kSteps << " steps your loop peaked " << loop
      << " bytes above the model, AdamW and batches; one step needs " << one_step
      << " (bound). Over by " << (loop - one_step)
      << " bytes. Revisit which tensors of a step are still referenced when the next step "
         "allocates, and which are alive longer than the line that needs them.";
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
  gtl::judge::Outputs recorded("TrainingLoop.ResultsAreBitwiseTheHungryLoops");
  recorded.record_all(got.losses);
  recorded.record_all(got.correct);
  recorded.record_all(got.grad_norms);
  for (const std::vector<float>& w : fixed.weights()) recorded.record_digest(w.data(), w.size());
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
