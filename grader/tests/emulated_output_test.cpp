// The emulator knows who wrote the output (common/emulator, emu::KernelOutput): a result buffer
// written by kernel threads passes; one written by host code, directly or with a copy from host
// memory, stops the test with a message that says so. cudaMemset stays allowed (a reduction
// zeroes its output before the kernels add into it).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda_runtime.h"
#include "result_writers.h"

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kN = 1000;

struct Inputs {
  std::vector<float> a = std::vector<float>(kN), b = std::vector<float>(kN);
  Inputs() {
    for (int64_t i = 0; i < kN; ++i) a[i] = float(i), b[i] = 0.5f * float(i);
  }
};

TEST(EmulatedOutput, AResultWrittenByKernelThreadsPasses) {
  const Inputs in;
  emu::KernelOutput<float> c(kN, kNaN, "c");
  add_by_kernel(in.a.data(), in.b.data(), c.data(), kN);
  for (int64_t i = 0; i < kN; ++i) ASSERT_EQ(c[i], in.a[i] + in.b[i]) << "c[" << i << "]";
  ASSERT_EQ(cudaMemset(c.data(), 0, kN * sizeof(float)), cudaSuccess);
  EXPECT_EQ(c[kN - 1], 0.f) << "cudaMemset may write a result buffer";
}

TEST(EmulatedOutputDeathTest, HostCodeWritingTheResultFailsSayingSo) {
  const Inputs in;
  emu::KernelOutput<float> c(kN, kNaN, "c");
  EXPECT_DEATH(add_by_host_code(in.a.data(), in.b.data(), c.data(), kN),
               "host code wrote the result buffer 'c' \\(byte 0 of 4000\\) outside any kernel "
               "launch: in an emulated check the result must be computed and written by kernel "
               "threads");
  EXPECT_TRUE(std::isnan(c[0])) << "nothing was written in this process";
}

TEST(EmulatedOutputDeathTest, ACopyOfAHostComputedResultFailsToo) {
  const Inputs in;
  emu::KernelOutput<float> c(kN, kNaN, "c");
  EXPECT_DEATH(add_by_copy_from_host(in.a.data(), in.b.data(), c.data(), kN),
               "host code wrote the result buffer 'c'");
}

}  // namespace
