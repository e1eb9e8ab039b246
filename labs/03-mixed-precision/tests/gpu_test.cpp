// Lab 03 on a GPU: the capstone's GPU rows run and learn; each skips (with the reason) without one.
#include <gtest/gtest.h>

#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "mixed_precision.h"

namespace {

TEST(CapstoneGpu, EveryGpuRowTrainsAndLearns) {
  GTL_REQUIRE_GPU();
  lab03::CapstoneOptions o;
  o.steps = 100;
  o.train_size = 6400;
  o.eval_samples = 500;
  const std::vector<lab03::CapstoneRow> rows = lab03::run_capstone(o);
  ASSERT_EQ(rows.size(), 4u);
  gtl::judge::Outputs recorded("CapstoneGpu.EveryGpuRowTrainsAndLearns");
  for (const lab03::CapstoneRow& r : rows)
    recorded.record(r.skipped), recorded.record(r.accuracy), recorded.record(r.final_loss),
        recorded.record(r.peak_bytes);
  for (const lab03::CapstoneRow& r : rows) {
    EXPECT_FALSE(r.skipped) << r.name << ": " << r.skip_reason;
    EXPECT_GE(r.accuracy, 0.8f) << "TODO 7: " << r.name << " after 100 steps";
    EXPECT_GT(r.peak_bytes, 0) << "TODO 7: " << r.name << " peak memory";
  }
  // Same model, data and seed: the GPU fp32 run ends near the CPU's (different summation order).
  EXPECT_NEAR(rows[1].final_loss, rows[0].final_loss, 0.05f) << "GPU FP32 vs CPU FP32";
}

}  // namespace
