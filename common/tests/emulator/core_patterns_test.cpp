// The emulated suite catches the bugs the core's kernel patterns invite: the core's own block
// reduction (gtl/ops/detail/warp_reduce.cuh) is right under every thread schedule, the same
// reduction without its leading __syncthreads is caught as a wrong result, and a grid-stride loop
// with an off-by-one bound is stopped by AddressSanitizer at the kernel's line. This is what the
// emulated build of the core (gtl_core_emulated, docs/architecture.md) relies on to find such
// bugs in the core's CUDA code without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core_patterns_kernels.h"

namespace {

constexpr int kSchedules = 3;  // forward, reverse, warps ahead: consecutive launches rotate

// Small integers: every partial sum is exact, so every order of addition gives the same total.
std::vector<float> small_integers(int64_t n) {
  std::vector<float> x(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i % 7 - 3);
  return x;
}

struct Totals {
  float sum = 0.f, squares = 0.f;
};

Totals totals_of(const std::vector<float>& x) {
  Totals t;
  for (float v : x) {
    t.sum += v;
    t.squares += v * v;
  }
  return t;
}

// How many threads of the block received a first or second total other than the right one.
int threads_with_a_wrong_total(const std::vector<float>& x, int threads, bool core_reduce) {
  std::vector<float> firsts(static_cast<std::size_t>(threads), -1.f), seconds = firsts;
  emutest::core::two_block_sums(x.data(), static_cast<int64_t>(x.size()), threads, core_reduce,
                                firsts.data(), seconds.data());
  const Totals want = totals_of(x);
  int wrong = 0;
  for (int t = 0; t < threads; ++t)
    wrong += firsts[static_cast<std::size_t>(t)] != want.sum ||
             seconds[static_cast<std::size_t>(t)] != want.squares;
  return wrong;
}

TEST(EmulatorCorePatterns, CoreBlockReduceTwiceInARowIsRightUnderEverySchedule) {
  const std::vector<float> x = small_integers(1000);
  for (int launch = 0; launch < kSchedules; ++launch)
    for (int threads : {32, 96, 256, 1024})
      EXPECT_EQ(threads_with_a_wrong_total(x, threads, true), 0)
          << "gtl::ops::cuda_detail::block_reduce, " << threads << " threads, launch " << launch
          << ": every thread must receive both exact totals (sum and sum of squares)";
}

// The bug a GPU hides: the race needs one warp to run a whole reduction ahead of another. The
// warps-ahead schedule makes it happen, so one of any three consecutive launches must be wrong.
TEST(EmulatorCorePatterns, BlockReduceMissingItsLeadingBarrierIsCaught) {
  const std::vector<float> x = small_integers(1000);
  int wrong_launches = 0;
  for (int launch = 0; launch < kSchedules; ++launch)
    wrong_launches += threads_with_a_wrong_total(x, 256, false) > 0;
  EXPECT_GE(wrong_launches, 1)
      << "two block reductions sharing scratch memory without a __syncthreads before the "
         "second one's writes gave the right totals under all three schedules: the emulator "
         "hides the race that warp_reduce.cuh's first barrier prevents";
}

class EmulatorCorePatternsDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// `i <= n` in a grid-stride loop: the thread that gets i = n reads x[n] and writes y[n].
TEST_F(EmulatorCorePatternsDeathTest, OffByOneGridStrideBoundIsStopped) {
  constexpr int64_t kN = 100;
  std::vector<float> x(kN, 1.f), y(kN, 0.f);
  EXPECT_DEATH(emutest::core::scale_with_off_by_one_bound(x.data(), y.data(), kN),
               "AddressSanitizer: heap-buffer-overflow.*READ of size "
               "4.*scale_with_off_by_one_bound_kernel.*core_patterns_kernels\\.cu:[0-9]+");
}

}  // namespace
