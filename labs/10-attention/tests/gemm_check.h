// The check both of TODO 4's test programs make (gemm_emulated_test.cpp on the CPU emulator,
// gemm_test.cpp on a GPU): a GEMM over every shape, fp16 then bf16, each C recorded for the judge
// and compared element by element with the exact product within its derived tolerance.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gemm_cases.h"
#include "gtl_judge_output.h"
#include "tolerance_mismatch.h"

namespace lab10_gemm_cases {

// C for a shape's inputs, in bf16 or fp16: the kernel under test, run where the program runs it.
using RunGemm = std::function<std::vector<float>(const Shape&, const Inputs&, bool bf16)>;

// Stops at the first failing case: it says enough.
inline void expect_gemm_right(const std::string& test, const std::string& todo,
                              const std::vector<Shape>& all, const RunGemm& run) {
  gtl::judge::Outputs recorded(test);
  for (bool bf16 : {false, true})
    for (const Shape& s : all) {
      const Inputs in = inputs(s, bf16);
      const Reference want = reference(s, in);
      const std::vector<float> got = run(s, in, bf16);
      if (::testing::Test::HasFailure()) return;  // the run itself failed
      recorded.record_all(got);
      expect_no_mismatch(first_mismatch(want.c, want.tolerance, got.data()),
                         ::testing::Message()
                             << todo << ", " << describe(s, bf16) << ", "
                             << gtl::test_seed::describe()
                             << ": NaN means a tile of C never stored (a tail block, a warp that "
                                "returned early); wrong everywhere by about 1e-3 relative means "
                                "16-bit accumulation; wrong values, a transposed tile or a "
                                "fragment indexed as if its layout were known (revisit: WMMA "
                                "fragments and ldm, handout)");
      if (::testing::Test::HasFailure()) return;
    }
}

}  // namespace lab10_gemm_cases
