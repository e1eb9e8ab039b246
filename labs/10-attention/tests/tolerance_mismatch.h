// Element-wise comparison with a tolerance per element (attention_cases.h derives them): the first
// element of a kernel's output outside its tolerance, described for the student, and the failure
// that puts the lesson before it.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

// The first element with |expected - got| above its tolerance, described; "" if none.
inline std::string first_mismatch(const std::vector<double>& expected,
                                  const std::vector<double>& tolerance, const float* got) {
  for (size_t i = 0; i < expected.size(); ++i) {
    const double err = std::fabs(expected[i] - got[i]);
    if (!(err <= tolerance[i]))  // written so that NaN fails
      return "element " + std::to_string(i) + ": expected " + std::to_string(expected[i]) +
             ", got " + std::to_string(got[i]) + ", tolerance " + std::to_string(tolerance[i]) +
             (std::isnan(got[i]) ? " (NaN: never written, or computed as NaN)" : "");
  }
  return "";
}

// Fails with the lesson first (the grader's one-line summary shows a failure's first line) and
// the evidence after it.
inline void expect_no_mismatch(const std::string& mismatch, const ::testing::Message& lesson) {
  if (!mismatch.empty()) ADD_FAILURE() << lesson << " [" << mismatch << "]";
}
