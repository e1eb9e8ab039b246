// Lab 01 on the CPU emulator (common/emulator): your vector-add kernel (TODO 3) and stream
// pipeline (TODO 6), compiled as C++ and run with one fiber per CUDA thread, on any machine.
// The emulator checks what you compute and the launches you make (an empty grid or more than
// 1024 threads per block does not run, and cudaGetLastError says why); it runs every call to
// completion before returning, so it cannot see overlap, timing, or a missing synchronisation: the
// GPU tests and benchmarks do.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cuda_runtime.h"  // the emulator's: emu::KernelOutput
#include "gpu_basics.h"
#include "gtl_judge_output.h"
#include "lab01_cases.h"

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The index of the first element that differs from want (NaN: never written), or -1.
template <typename Got>
int64_t first_difference(const std::vector<float>& want, const Got& got) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(got[i] == want[i])) return static_cast<int64_t>(i);
  return -1;
}

TEST(EmulatedVectorAdd, KernelCoversAnyN) {
  // Sizes around the block (256) and beyond the grid the solution launches (132 SMs x 8 blocks x
  // 256 threads = 270 336 threads), where only a grid-stride loop reaches the last elements.
  // One more size is drawn from the grading seed; c (with its guard element) goes to the judge.
  gtl::judge::Outputs recorded("EmulatedVectorAdd.KernelCoversAnyN");
  for (int64_t n : lab01_cases::emulated_vector_add_sizes()) {
    const std::vector<float> a = lab01_cases::ramp(n, 0.5f), b = lab01_cases::ramp(n, -0.25f);
    // Written only by kernel threads: host code that computes c itself fails (the emulator).
    emu::KernelOutput<float> c(size_t(n) + 1, kNaN, "c");
    std::vector<float> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
    lab01::vector_add_device(a.data(), b.data(), c.data(), n, nullptr);
    recorded.record_digest(c.data(), size_t(n) + 1);
    const int64_t bad = first_difference(want, c);
    if (bad >= 0)
      ADD_FAILURE() << "TODO 3a, n = " << n << ": c[" << bad << "] is " << c[bad]
                    << (std::isnan(c[bad]) ? " (never written)" : "")
                    << ": start at blockIdx.x * blockDim.x + threadIdx.x and step by "
                       "blockDim.x * gridDim.x until n";
    if (!std::isnan(c[n]))
      ADD_FAILURE() << "TODO 3a, n = " << n << ": wrote c[n], past the end (i < n)";
  }
}

TEST(EmulatedVectorAdd, RoundTripThroughDeviceMemory) {
  gtl::judge::Outputs recorded("EmulatedVectorAdd.RoundTripThroughDeviceMemory");
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{100003}}) {
    const std::vector<float> a = lab01_cases::ramp(n, 2.f), b = lab01_cases::ramp(n, 1.f);
    std::vector<float> c(n, kNaN), want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = a[i] + b[i];
    lab01::vector_add_gpu(a.data(), b.data(), c.data(), n);
    recorded.record_digest(c.data(), size_t(n));
    const int64_t bad = first_difference(want, c);
    if (bad >= 0)
      ADD_FAILURE() << "TODO 3b, n = " << n << ": c[" << bad << "] "
                    << (std::isnan(c[bad]) ? "was never written" : "differs")
                    << ": copy a and b in, launch, copy c back (n floats each way)";
  }
}

TEST(EmulatedStreamPipeline, ChunksCoverEveryElementOnce) {
  // More chunks than elements, chunks that do not divide n, trailing chunks with nothing to do
  // (13 elements in 12 chunks of 2: 7 hold data), one chunk: every element exactly once.
  // The last case is drawn from the grading seed; out goes to the judge.
  gtl::judge::Outputs recorded("EmulatedStreamPipeline.ChunksCoverEveryElementOnce");
  for (auto [n, chunks] : lab01_cases::emulated_pipeline_cases()) {
    const std::vector<float> in = lab01_cases::ramp(n, 1.5f);
    std::vector<float> out(n, kNaN), want(n), d_in(n, kNaN), d_out(n, kNaN);
    for (int64_t i = 0; i < n; ++i) want[i] = 3.f * in[i];
    lab01::scale_pipelined(in.data(), out.data(), d_in.data(), d_out.data(), n, 3.f, chunks);
    recorded.record_digest(out.data(), size_t(n));
    const int64_t bad = first_difference(want, out);
    if (bad >= 0)
      ADD_FAILURE() << "TODO 6, n = " << n << ", " << chunks << " chunks: out[" << bad << "] "
                    << (std::isnan(out[bad]) ? "was never written" : "is wrong")
                    << ": chunk c covers [c * chunk, min((c + 1) * chunk, n)) "
                       "with chunk = ceil(n / chunks); the last may be shorter or empty";
  }
}

}  // namespace
