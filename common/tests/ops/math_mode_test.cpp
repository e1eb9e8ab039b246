// The math-mode switches are per thread: simulated ranks are threads, and one rank turning TF32 on
// must not change the GEMMs of another rank mid-step.
#include "gtl/ops/math_mode.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace gtl::ops {
namespace {

TEST(MathMode, SwitchesAreOffByDefaultAndScopedGuardsRestore) {
  EXPECT_FALSE(tf32_enabled());
  EXPECT_FALSE(cudnn_benchmark_enabled());
  EXPECT_FALSE(row_invariant_enabled());
  {
    ScopedTF32 tf32(true);
    ScopedCudnnBenchmark bench(true);
    ScopedRowInvariant rows(true);
    EXPECT_TRUE(tf32_enabled());
    EXPECT_TRUE(cudnn_benchmark_enabled());
    EXPECT_TRUE(row_invariant_enabled());
  }
  EXPECT_FALSE(tf32_enabled()) << "ScopedTF32 must restore the previous value";
  EXPECT_FALSE(cudnn_benchmark_enabled()) << "ScopedCudnnBenchmark must restore the previous value";
  EXPECT_FALSE(row_invariant_enabled()) << "ScopedRowInvariant must restore the previous value";
}

TEST(MathMode, EachThreadHasItsOwnSwitches) {
  // Two "ranks" flip their switches back and forth in lock step; each must always read its own
  // value. With one process-wide switch, rank 1 would see rank 0's writes.
  std::atomic<int> mismatches{0};
  auto rank = [&](bool mine) {
    for (int i = 0; i < 2000; ++i) {
      set_tf32_enabled(mine);
      set_cudnn_benchmark(!mine);
      std::this_thread::yield();
      if (tf32_enabled() != mine || cudnn_benchmark_enabled() == mine) ++mismatches;
    }
  };
  std::thread a(rank, true), b(rank, false);
  a.join();
  b.join();
  EXPECT_EQ(mismatches.load(), 0) << "a thread read another thread's math mode: the switches must "
                                     "be thread_local so simulated ranks do not race";
  EXPECT_FALSE(tf32_enabled())
      << "the test thread's switch changed because other threads set theirs";
}

TEST(MathMode, ANewThreadStartsWithTheDefaults) {
  ScopedTF32 tf32(true);
  bool seen = true;
  std::thread t([&] { seen = tf32_enabled(); });
  t.join();
  EXPECT_FALSE(seen) << "a new thread (a new rank) starts with TF32 off; each rank sets its own";
}

}  // namespace
}  // namespace gtl::ops
