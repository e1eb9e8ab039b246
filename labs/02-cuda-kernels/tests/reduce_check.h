// One reduction version on every case of lab02_cases::reduce_cases (fixed edge sizes, offsets that
// break 16-byte alignment, two sizes drawn from the grading seed), on the CPU emulator; shared by
// the emulated tests of TODOs 1a and 1b (kernels_emulated_test.cpp) and of 1c
// (reduce_final_emulated_test.cpp). Records each sum for the judge under the test's name.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cuda_runtime.h"  // the emulator's: emu::KernelOutput
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "kernel_cases.h"

using ReduceFn = void (*)(const float*, float*, int64_t, cudaStream_t);

inline void expect_reduces_every_case(const char* test, const char* version, ReduceFn fn,
                                      const char* likely_cause) {
  gtl::judge::Outputs recorded(test);
  for (const auto& [n, offset] : lab02_cases::reduce_cases(test)) {
    // offset 1..3: the input does not start on a 16-byte boundary (vector loads need a fallback)
    const std::vector<float> buffer = lab02_cases::reduce_buffer(n, offset);
    const float* x = buffer.data() + offset;
    const auto [exact, magnitude] = lab02_cases::reduce_reference(x, n);
    emu::KernelOutput<float> result(1, std::numeric_limits<float>::quiet_NaN(), "out");
    fn(x, result.data(), n, nullptr);
    const float out = result[0];
    recorded.record(out);
    if (!lab02_cases::reduce_close(out, exact, magnitude))
      ADD_FAILURE() << version << ", n = " << n << ", input offset " << offset << " floats ("
                    << gtl::test_seed::describe() << "): got " << out << ", expected " << exact
                    << " (NaN: *out never written; 0: nothing was added; far off: elements lost "
                       "at block edges, or "
                    << likely_cause << ")";
  }
}
