// Helpers shared by the course's tests.
//
//   GTL_REQUIRE_GPU();                       skip (with the reason) when no GPU is usable
//   gpu_or_emulated(gpu, emulated)           a test size: large on a GPU, small when emulated
//   expect_close(actual, expected, tol, what)  element-wise check that fails on NaN and inf
//   expect_error_naming(fn, parts, what)     fn must throw gtl::Error naming every part
//
// Comparisons are written so that NaN fails: `!(err <= tol)` is true for NaN, whereas the common
// `err > tol` is false for NaN and lets a broken kernel pass.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gtl/runtime/device.h"
#include "gtl/runtime/error.h"
#include "gtl/tensor/tensor.h"

#define GTL_REQUIRE_GPU()                                                       \
  do {                                                                          \
    if (!::gtl::cuda_available())                                               \
      GTEST_SKIP() << "needs a CUDA GPU: " << ::gtl::cuda_unavailable_reason(); \
  } while (0)

namespace gtl::testing {

// A size for a test of the CUDA path: `gpu` on a GPU, `emulated` in the emulated-CUDA build
// (GTL_EMULATED_CUDA: every CUDA thread is a fiber on one CPU core, thousands of times slower).
// Pick the small size of the same kind as the large one: odd, over several blocks, and so on.
constexpr int64_t gpu_or_emulated(int64_t gpu, int64_t emulated) {
#ifdef GTL_EMULATED_CUDA
  (void)gpu;
  return emulated;
#else
  (void)emulated;
  return gpu;
#endif
}

// Tolerance: |a - e| <= atol + rtol * |e|, element by element.
struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
};

// Returns an empty string when every element is finite and within tolerance, otherwise a
// message naming the first bad index, both values and the tolerance.
inline std::string compare(const std::vector<float>& actual, const std::vector<float>& expected,
                           Tolerance tol) {
  if (actual.size() != expected.size()) {
    return "size mismatch: got " + std::to_string(actual.size()) + " values, expected " +
           std::to_string(expected.size());
  }
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double a = actual[i], e = expected[i];
    if (std::isnan(e) || std::isinf(e)) {
      if (std::isnan(e) ? std::isnan(a) : a == e) continue;
    } else {
      const double err = std::fabs(a - e);
      if (err <= tol.atol + tol.rtol * std::fabs(e)) continue;  // false for NaN: NaN fails
    }
    return "element " + std::to_string(i) + ": got " + std::to_string(a) + ", expected " +
           std::to_string(e) + " (atol " + std::to_string(tol.atol) + ", rtol " +
           std::to_string(tol.rtol) + ")";
  }
  return "";
}

inline void expect_close(const Tensor& actual, const Tensor& expected, Tolerance tol,
                         const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what << ": shapes differ";
  const std::string err = compare(actual.to_vector(), expected.to_vector(), tol);
  EXPECT_TRUE(err.empty()) << what << ": " << err;
}

// Runs `fn` and expects a gtl::Error whose message contains every one of `parts`.
inline void expect_error_naming(const std::function<void()>& fn,
                                const std::vector<std::string>& parts, const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << what << ": expected a gtl::Error, nothing was thrown";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos)
          << what << ": the message should name '" << p << "', got: " << msg;
  }
}

}  // namespace gtl::testing
