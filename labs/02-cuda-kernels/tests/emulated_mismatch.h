// Element-wise comparison for the emulated tests (kernels_emulated_test.cpp,
// softmax_layernorm_emulated_test.cpp): the first element of a kernel's output outside the
// tolerance, described for the student, and the failure that puts the lesson before it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

// The first element outside atol + rtol |expected|, described for the student; "" if none.
inline std::string first_mismatch(const std::vector<double>& expected, const float* got,
                                  double rtol, double atol) {
  for (size_t i = 0; i < expected.size(); ++i) {
    const double err = std::fabs(expected[i] - got[i]);
    if (!(err <= atol + rtol * std::fabs(expected[i])))  // written so that NaN fails
      return "element " + std::to_string(i) + ": expected " + std::to_string(expected[i]) +
             ", got " + std::to_string(got[i]) +
             (std::isnan(got[i]) ? " (NaN: never written, or computed as NaN)" : "");
  }
  return "";
}

// Fails with the lesson first (the grader's one-line summary shows a failure's first line) and
// the evidence after it.
inline void expect_no_mismatch(const std::string& mismatch, const ::testing::Message& lesson) {
  if (!mismatch.empty()) ADD_FAILURE() << lesson << " [" << mismatch << "]";
}
