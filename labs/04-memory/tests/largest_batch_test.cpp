// Lab 04, TODO 6: the largest batch under a memory limit, found with OOMs caught and the
// allocator left clean after each.
#include <gtest/gtest.h>

#include <cmath>

#include "gtl_judge_output.h"
#include "lab04_cases.h"
#include "lab04_student_call.h"
#include "memory_lab.h"

namespace {

// Your find_largest_batch, inside TODO 6's scope of the reference guard.
lab04::BatchSearch find_largest(const lab04::ModelConfig& config,
                                const std::shared_ptr<gtl::Allocator>& allocator,
                                int64_t max_batch) {
  const auto call = lab04_student_call::todo6();
  return lab04::find_largest_batch(config, allocator, max_batch);
}

// Whether one step at `batch` fits under `limit`: its peak, measured in an allocator without a
// limit, is at most the limit (the CPU allocator reserves exactly what it hands out, and a limit
// refuses the first allocation that would pass it).
bool step_fits(const lab04::ModelConfig& config, int64_t limit, int64_t batch) {
  const int64_t peak = lab04_cases::step_peak(gtl::make_cpu_allocator(),
                                              [&] { lab04::train_step_once(config, batch); });
  return peak <= limit;
}

void expect_largest(int64_t limit, int64_t max_batch) {
  lab04::ModelConfig config;
  const std::shared_ptr<gtl::Allocator> allocator = gtl::make_cpu_allocator();
  allocator->set_memory_limit(limit);
  const lab04::BatchSearch found = find_largest(config, allocator, max_batch);
  gtl::judge::Outputs("LargestBatch.FindsTheLargestBatchUnderALimit.limit" + std::to_string(limit))
      .record(found.largest);
  const gtl::MemoryStats s = allocator->stats();
  EXPECT_EQ(s.allocated_bytes, 0)
      << "TODO 6: after the search the allocator holds nothing: every try, OOM or not, frees "
         "its model, optimizer and batch";
  EXPECT_EQ(s.num_ooms, found.ooms) << "TODO 6: count every OutOfMemoryError you caught";
  EXPECT_LE(found.tries, 2 * static_cast<int64_t>(std::ceil(std::log2(max_batch))) + 2)
      << "TODO 6: expected at most "
      << 2 * static_cast<int64_t>(std::ceil(std::log2(max_batch))) + 2
      << " tries (O(log max_batch)) for max_batch " << max_batch << ", got " << found.tries
      << ": revisit what one try tells you about every other batch size";
  EXPECT_GT(found.tries, 0);
  const bool largest_fits = found.largest == 0 || step_fits(config, limit, found.largest);
  EXPECT_TRUE(largest_fits) << "TODO 6: batch " << found.largest << " does not fit under "
                            << gtl::format_bytes(limit);
  if (found.largest < max_batch) {
    EXPECT_FALSE(step_fits(config, limit, found.largest + 1))
        << "TODO 6: batch " << found.largest + 1 << " also fits under " << gtl::format_bytes(limit)
        << ": the answer is the LARGEST batch (check the bisection's bounds)";
  }
}

TEST(LargestBatch, FindsTheLargestBatchUnderALimit) {
  expect_largest(int64_t(5) << 20, 4096);  // the answer lies between two powers of two
  expect_largest(int64_t(12) << 20, 4096);
}

TEST(LargestBatch, EveryBatchFitsOrNoneDoes) {
  lab04::ModelConfig config;
  const auto roomy = gtl::make_cpu_allocator();
  roomy->set_memory_limit(int64_t(64) << 20);
  EXPECT_EQ(find_largest(config, roomy, 100).largest, 100)
      << "TODO 6: max_batch itself fits (100, not a power of two): return it";
  const auto tight = gtl::make_cpu_allocator();
  tight->set_memory_limit(int64_t(1) << 20);  // less than the model and AdamW
  const lab04::BatchSearch none = find_largest(config, tight, 100);
  gtl::judge::Outputs("LargestBatch.EveryBatchFitsOrNoneDoes").record(none.largest);
  EXPECT_EQ(none.largest, 0) << "TODO 6: not even batch 1 fits under 1 MiB: return 0";
  EXPECT_EQ(tight->stats().allocated_bytes, 0) << "TODO 6: clean after the OOM";
}

}  // namespace
