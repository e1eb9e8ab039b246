// Lab 03, TODO 7: the capstone's rows, checked against the same training replayed here.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "gtl/data/synthetic_digits.h"
#include "gtl/memory/allocator.h"
#include "gtl/train/trainer.h"
#include "gtl_judge_output.h"
#include "lab03_cases.h"
#include "mixed_precision.h"

namespace {

lab03::CapstoneOptions small() {
  return lab03_cases::capstone_options();
}

TEST(Capstone, CpuRowMatchesTheSameTrainingReplayed) {
  const lab03::CapstoneOptions o = small();
  // A 64 MiB peak from before, in the default allocator: a row that reads it fails.
  { const gtl::Tensor earlier = gtl::Tensor::empty({1 << 24}); }
  const lab03::CapstoneRow row = lab03::run_capstone_row("CPU FP32", gtl::Device::cpu(), "fp32", o);
  ASSERT_FALSE(row.skipped) << "TODO 7: the CPU row always runs";
  EXPECT_EQ(row.name, "CPU FP32");
  EXPECT_EQ(row.device, "cpu");
  gtl::judge::Outputs recorded("Capstone.CpuRowMatchesTheSameTrainingReplayed");
  recorded.record(row.peak_bytes), recorded.record(row.accuracy), recorded.record(row.final_loss);
  // The replay (lab03_cases.h, shared with the judge): the same training, measured here.
  const lab03_cases::CapstoneReplay replay = lab03_cases::replay_capstone_cpu_row(o);
  const int64_t state = replay.state, peak = replay.peak;
  const float accuracy = replay.accuracy, loss = replay.loss;
  EXPECT_EQ(row.peak_bytes, peak)
      << "TODO 7: the training thread's peak: expected " << peak << " bytes (the state building "
      << "the trainer left, " << state << ", + the steps' own peak, " << replay.step_peak
      << "), exact on every run; revisit what the peak counts (handout, \"Expected figures\")";
  EXPECT_EQ(row.accuracy, accuracy) << "TODO 7: test accuracy over eval_samples after the steps";
  EXPECT_EQ(row.final_loss, loss) << "TODO 7: the last step's training loss";
  EXPECT_EQ(row.skipped_steps, 0);
  EXPECT_TRUE(row.seconds_per_epoch > 0 && std::isfinite(row.seconds_per_epoch))
      << "TODO 7: mean step time x batches per epoch";
  // Memory formula (README): parameters, gradients and AdamW's two moments, 16 bytes per
  // parameter, are all live during a step; activations come on top.
  const int64_t params = replay.params;
  EXPECT_GE(row.peak_bytes, 16 * params) << "TODO 7: peak below weights + grads + AdamW state";
}

TEST(Capstone, FourRowsAndGpuRowsSayWhyTheyAreSkipped) {
  lab03::CapstoneOptions o = small();
  o.steps = 5;
  const std::vector<lab03::CapstoneRow> rows = lab03::run_capstone(o);
  ASSERT_EQ(rows.size(), 4u) << "TODO 7: CPU FP32, GPU FP32, GPU FP16+scaler, GPU BF16";
  const char* names[] = {"CPU FP32", "GPU FP32", "GPU FP16+scaler", "GPU BF16"};
  const char* precisions[] = {"fp32", "fp32", "fp16", "bf16"};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(rows[i].name, names[i]) << "TODO 7: row " << i;
    EXPECT_EQ(rows[i].precision, precisions[i]) << "TODO 7: row " << i;
    if (i > 0) {
      EXPECT_EQ(rows[i].device, "cuda:0") << "TODO 7: row " << i;
    }
  }
  EXPECT_EQ(rows[0].speedup_vs_cpu, 1.0) << "TODO 7: the CPU row is the baseline: speedup 1";
  for (std::size_t i = 1; i < 4; ++i) {
    if (gtl::cuda_available()) {
      EXPECT_FALSE(rows[i].skipped);
      EXPECT_EQ(rows[i].speedup_vs_cpu, rows[0].seconds_per_epoch / rows[i].seconds_per_epoch)
          << "TODO 7: speedup = CPU time per epoch / this row's";
    } else {
      EXPECT_TRUE(rows[i].skipped) << "TODO 7: no GPU here: the GPU rows are skipped";
      EXPECT_NE(rows[i].skip_reason.find(gtl::cuda_unavailable_reason()), std::string::npos)
          << "TODO 7: the reason must include cuda_unavailable_reason(), got '"
          << rows[i].skip_reason << "'";
    }
  }
}

}  // namespace
