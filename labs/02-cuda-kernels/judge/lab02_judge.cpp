// The judge of lab 02 (docs/grader.md, "The judge"): built from the course alone (the lab's test
// cases, the core's CPU operations), never from the student's files. gtl-grade runs
// `lab02_judge <check>` after the check's tests; each case reads what those tests recorded
// (gtl_judge_output.h): the outputs of the TODO's kernels on the tests' inputs, the seeded ones
// included. It recomputes the references on the CPU, in double precision for the emulated tests
// (tests/kernel_cases.h) and with the core's operations for the GPU tests
// (tests/kernel_gpu_cases.h, the references kernels_test.cpp uses), and compares with the tests'
// own tolerances: exactly (by digest) where a test requires bits, within atol + rtol |want| else.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtl/ops/activations.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/layernorm.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/softmax.h"
#include "gtl_judge.h"
#include "kernel_cases.h"
#include "kernel_gpu_cases.h"

namespace {

using gtl::Tensor;
using gtl::judge::Recorded;
using gtl::judge::Rejection;

std::vector<double> widen(const std::vector<float>& v) {
  return {v.begin(), v.end()};
}
std::vector<float> narrow(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}
std::string shape(int rows, int cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

// ---- emulated checks (kernels_, reduce_final_ and softmax_layernorm_emulated_test.cpp) ---------

std::string emulated_reduce(const char* test) {
  Recorded r(test);
  int cases = 0;
  for (const auto& [n, offset] : lab02_cases::reduce_cases(test)) {
    const std::vector<float> buffer = lab02_cases::reduce_buffer(n, offset);
    const auto [exact, magnitude] = lab02_cases::reduce_reference(buffer.data() + offset, n);
    const std::string what =
        "the sum for n = " + std::to_string(n) + ", offset " + std::to_string(offset);
    const auto got = r.next<float>(what);
    if (!lab02_cases::reduce_close(got, exact, magnitude))
      throw Rejection(std::string(test) + ": " + what + " is " + gtl::judge::show(got) +
                      ", the judge computes " + gtl::judge::show(exact));
    ++cases;
  }
  return std::to_string(cases) + " sums right";
}

// TODO 1b's block_reduce twice in a row (EmulatedReduce. and Reduce.BlockReduceTwiceInARow, the
// same cases): every thread's max exactly, its sum within the tolerance.
std::string block_twice(const std::string& test) {
  Recorded r(test);
  for (auto [threads, n] : lab02_cases::block_twice_cases()) {
    const std::vector<float> x = lab02_cases::block_twice_input(n);
    const float want_max = *std::max_element(x.begin(), x.end());
    const auto [want_sum, magnitude] = lab02_cases::reduce_reference(x.data(), n);
    const std::string what = "the max and sum of " + std::to_string(n) + " values, " +
                             std::to_string(threads) + " threads";
    const std::vector<float> got = r.sequence<float>(what, 2 * size_t(threads));
    for (int t = 0; t < threads; ++t)
      if (got[2 * t] != want_max || !lab02_cases::reduce_close(got[2 * t + 1], want_sum, magnitude))
        throw Rejection(test + ": " + what + ": thread " + std::to_string(t) + " got " +
                        gtl::judge::show(got[2 * t]) + " and " + gtl::judge::show(got[2 * t + 1]) +
                        ", the judge computes " + gtl::judge::show(want_max) + " and " +
                        gtl::judge::show(want_sum));
  }
  return "every thread's max and sum right";
}

std::string transpose_emulated() {
  Recorded r("EmulatedTranspose.BothVersionsOnOddShapes");
  for (auto [rows, cols] : lab02_cases::transpose_shapes())
    r.expect_digest(narrow(lab02_cases::transpose_reference(
                        lab02_cases::transpose_input(rows, cols), rows, cols)),
                    "the tiled transpose of " + shape(rows, cols));
  return "every transpose exact";
}

std::string sgemm_emulated() {
  Recorded r("EmulatedSgemm.EveryVersionOnEdgeShapes");
  for (auto [m, n, k] : lab02_cases::sgemm_shapes()) {
    const std::vector<double> want = lab02_cases::sgemm_reference(
        lab02_cases::sgemm_a(m, k), lab02_cases::sgemm_b(k, n), m, n, k);
    for (const char* version : {"TODO 3a", "TODO 3b"}) {
      const std::string what = std::string(version) + " C for M N K = " + std::to_string(m) + " " +
                               std::to_string(n) + " " + std::to_string(k);
      std::vector<float> c = r.sequence<float>(what, want.size() + 1);
      if (!std::isnan(c.back())) throw Rejection(what + ": written past its end");
      c.pop_back();
      gtl::judge::expect_close(want, c, 1e-4, 1e-5 * k, what);
    }
  }
  return "every product within the test's tolerance";
}

std::string softmax_emulated() {
  Recorded r("EmulatedSoftmax.BothVersionsOnOddRowsLongRowsLargeAndMaskedLogits");
  for (auto [rows, cols, scale] : lab02_cases::softmax_cases()) {
    const std::vector<double> want =
        lab02_cases::softmax_reference(lab02_cases::softmax_input(rows, cols, scale), rows, cols);
    const std::string what = "the online softmax of " + shape(rows, cols);
    gtl::judge::expect_close(want, r.sequence<float>(what, want.size()), 1e-4, 1e-7, what);
  }
  return "every row within the test's tolerance";
}

std::string layernorm_emulated() {
  Recorded r("EmulatedLayerNorm.BothVersionsWithSavedStatistics");
  for (auto [rows, cols, offset] : lab02_cases::layernorm_cases()) {
    const auto want = lab02_cases::layernorm_reference(
        lab02_cases::layernorm_input(rows, cols, offset), rows, cols);
    const double tol = lab02_cases::layernorm_tolerance(offset);
    const std::string what = "TODO 5 layernorm of " + shape(rows, cols);
    gtl::judge::expect_close(want.mean, r.sequence<float>(what + ": mean", want.mean.size()), 1e-5,
                             1e-6, what + ": mean");
    gtl::judge::expect_close(want.rstd, r.sequence<float>(what + ": rstd", want.rstd.size()), tol,
                             1e-6, what + ": rstd");
    gtl::judge::expect_close(want.y, r.sequence<float>(what + ": output", want.y.size()), tol, tol,
                             what + ": output");
  }
  return "outputs and saved statistics within the test's tolerance";
}

std::string layernorm_backward_emulated() {
  Recorded r("EmulatedLayerNormBackward.StretchStep");
  for (auto [rows, cols] : lab02_cases::layernorm_backward_cases()) {
    const auto k = lab02_cases::layernorm_backward_case(rows, cols);
    const std::string what = "TODO 5b of " + shape(rows, cols);
    const double sums = 1e-5 * std::sqrt(double(rows)) + 1e-5;
    gtl::judge::expect_close(k.dx, r.sequence<float>(what + ": dx", k.dx.size()), 1e-3, 1e-4,
                             what + ": dx");
    gtl::judge::expect_close(k.dw, r.sequence<float>(what + ": dweight", k.dw.size()), 1e-4, sums,
                             what + ": dweight");
    gtl::judge::expect_close(k.db, r.sequence<float>(what + ": dbias", k.db.size()), 1e-4, sums,
                             what + ": dbias");
  }
  return "gradients within the test's tolerance";
}

std::string bias_gelu_emulated() {
  Recorded r("EmulatedBiasGelu.FusedAndUnfused");
  for (auto [rows, cols] : lab02_cases::bias_gelu_cases()) {
    const std::vector<double> want = lab02_cases::bias_gelu_reference(
        lab02_cases::bias_gelu_x(rows, cols), lab02_cases::bias_gelu_bias(cols), cols);
    const std::string what = "the fused bias + GELU of " + shape(rows, cols);
    gtl::judge::expect_close(want, r.sequence<float>(what, want.size()), 1e-5, 1e-6, what);
  }
  return "every element within the test's tolerance";
}

// ---- GPU checks (kernels_, reduce_final_ and softmax_layernorm_test.cpp): core references -----

std::string gpu_reduce(const char* test) {
  Recorded r(test);
  int cases = 0;
  for (int64_t n : lab02_gpu_cases::reduce_sizes()) {
    double exact = 0, magnitude = 0;
    for (float v : lab02_gpu_cases::reduce_input(n).to_vector())
      exact += v, magnitude += std::fabs(v);
    for (int offset : {0, 1}) {
      const std::string what =
          "the sum for n = " + std::to_string(n) + ", offset " + std::to_string(offset);
      const auto got = r.next<float>(what);
      if (!(std::fabs(got - exact) <= 1e-5 * magnitude + 1e-6))
        throw Rejection(std::string(test) + ": " + what + " is " + gtl::judge::show(got) +
                        ", the judge computes " + gtl::judge::show(exact));
      ++cases;
    }
  }
  return std::to_string(cases) + " sums right";
}

std::string reduction_final() {
  const std::string summary = gpu_reduce("ReduceFinal.SeveralElementsPerThreadSumAnySize");
  double exact = 0;
  for (float v : lab02_gpu_cases::reduce_integers().to_vector()) exact += v;
  gtl::judge::expect_equal(Recorded("ReduceFinal.IntegersSumExactly").next<float>("the sum"),
                           static_cast<float>(exact), "the sum of 2^20 small integers");
  return summary + ", the integers exactly";
}

std::string transpose_gpu() {
  Recorded r("Transpose.BothVersionsOnOddShapes");
  for (auto [rows, cols] : lab02_gpu_cases::transpose_shapes()) {
    const std::vector<float> x = lab02_gpu_cases::transpose_input(rows, cols).to_vector();
    std::vector<float> want(x.size());
    for (int row = 0; row < rows; ++row)
      for (int col = 0; col < cols; ++col)
        want[int64_t{col} * rows + row] = x[int64_t{row} * cols + col];
    r.expect_digest(want, "the tiled transpose of " + shape(rows, cols));
  }
  return "every transpose exact";
}

std::string sgemm_gpu() {
  Recorded exact("Sgemm.SmallIntegersGiveTheExactProduct");
  Recorded random("Sgemm.RandomMatricesMatchTheCpu");
  for (auto [m, n, k] : lab02_gpu_cases::gemm_shapes()) {
    const std::string mnk = std::to_string(m) + " " + std::to_string(n) + " " + std::to_string(k);
    const std::vector<float> integers = gtl::ops::matmul(lab02_gpu_cases::small_integers({m, k}, 1),
                                                         lab02_gpu_cases::small_integers({k, n}, 2))
                                            .to_vector();
    const auto [a, b] = lab02_gpu_cases::gemm_random(m, n, k);
    const std::vector<double> want = widen(gtl::ops::matmul(a, b).to_vector());
    for (const char* version : {"TODO 3a", "TODO 3b"})
      exact.expect_digest(integers, std::string(version) + " C of small integers, M N K = " + mnk);
    for (const char* version : {"TODO 3a", "TODO 3b"}) {
      const std::string what = std::string(version) + " C of random matrices, M N K = " + mnk;
      gtl::judge::expect_close(want, random.sequence<float>(what, want.size()), 1e-4,
                               1e-4 * std::sqrt(double(k)), what);
    }
  }
  return "integer products exact, random ones within the test's tolerance";
}

std::string softmax_gpu() {
  Recorded r("Softmax.BothVersionsOnOddRowsLongRowsLargeAndMaskedLogits");
  for (auto [rows, cols, scale] : lab02_gpu_cases::softmax_cases()) {
    const std::vector<double> want =
        widen(gtl::ops::softmax(lab02_gpu_cases::softmax_input(rows, cols, scale)).to_vector());
    const std::string what = "the online softmax of " + shape(rows, cols);
    gtl::judge::expect_close(want, r.sequence<float>(what, want.size()), 1e-4, 1e-7, what);
  }
  return "every row within the test's tolerance";
}

std::string layernorm_gpu() {
  Recorded r("LayerNorm.BothVersionsMatchTheCpuWithSavedStatistics");
  for (auto [rows, cols, offset] : lab02_gpu_cases::layernorm_cases()) {
    const auto [x, w, b] = lab02_gpu_cases::layernorm_input(rows, cols, offset);
    const auto want = gtl::ops::layernorm_forward(x, w, b, 1e-5f);
    const std::string what = "TODO 5 layernorm of " + shape(rows, cols);
    const double out_atol = offset > 0 ? 5e-3 : 1e-4;
    gtl::judge::expect_close(widen(want.mean.to_vector()),
                             r.sequence<float>(what + ": mean", size_t(rows)), 1e-5, 1e-5,
                             what + ": mean");
    gtl::judge::expect_close(widen(want.rstd.to_vector()),
                             r.sequence<float>(what + ": rstd", size_t(rows)), 1e-3, 1e-5,
                             what + ": rstd");
    gtl::judge::expect_close(widen(want.out.to_vector()),
                             r.sequence<float>(what + ": output", size_t(rows) * cols), 1e-3,
                             out_atol, what + ": output");
  }
  return "outputs and saved statistics within the test's tolerance";
}

std::string layernorm_backward_gpu() {
  Recorded r("LayerNormBackward.StretchMatchesTheCpu");
  for (auto [rows, cols] : lab02_gpu_cases::layernorm_backward_cases()) {
    const auto [x, dy, w, b] = lab02_gpu_cases::layernorm_backward_input(rows, cols);
    const auto fwd = gtl::ops::layernorm_forward(x, w, b, 1e-5f);
    const auto want = gtl::ops::layernorm_backward(dy, x, w, fwd.mean, fwd.rstd);
    const std::string what = "TODO 5b of " + shape(rows, cols);
    const double sums = 1e-5 * std::sqrt(double(rows)) + 1e-5;
    gtl::judge::expect_close(widen(want.dx.to_vector()),
                             r.sequence<float>(what + ": dx", size_t(rows) * cols), 1e-3, 1e-4,
                             what + ": dx");
    gtl::judge::expect_close(widen(want.dweight.to_vector()),
                             r.sequence<float>(what + ": dweight", size_t(cols)), 1e-4, sums,
                             what + ": dweight");
    gtl::judge::expect_close(widen(want.dbias.to_vector()),
                             r.sequence<float>(what + ": dbias", size_t(cols)), 1e-4, sums,
                             what + ": dbias");
  }
  return "gradients within the test's tolerance";
}

std::string bias_gelu_gpu() {
  Recorded r("BiasGelu.FusedAndUnfusedMatchTheCpu");
  for (auto [rows, cols] : lab02_gpu_cases::bias_gelu_cases()) {
    const auto [x, bias] = lab02_gpu_cases::bias_gelu_input(rows, cols);
    const std::vector<double> want = widen(gtl::ops::gelu(gtl::ops::bias_add(x, bias)).to_vector());
    const std::string what = "the fused bias + GELU of " + shape(rows, cols);
    gtl::judge::expect_close(want, r.sequence<float>(what, want.size()), 1e-5, 1e-5, what);
  }
  return "every element within the test's tolerance";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(
      argc, argv,
      {{"reduction-shared-emulated",
        [] { return emulated_reduce("EmulatedReduce.SharedMemoryTree"); }},
       {"reduction-warp-emulated",
        [] {
          return emulated_reduce("EmulatedReduce.WarpShuffles") + "; twice in a row, " +
                 block_twice("EmulatedReduce.BlockReduceTwiceInARow");
        }},
       {"reduction-final-emulated",
        [] { return emulated_reduce("EmulatedReduceFinal.SeveralElementsPerThread"); }},
       {"transpose-emulated", transpose_emulated},
       {"sgemm-emulated", sgemm_emulated},
       {"softmax-emulated", softmax_emulated},
       {"layernorm-emulated", layernorm_emulated},
       {"layernorm-backward-emulated", layernorm_backward_emulated},
       {"bias-gelu-emulated", bias_gelu_emulated},
       {"reduction-shared", [] { return gpu_reduce("Reduce.SharedMemoryTree"); }},
       {"reduction-warp",
        [] {
          return gpu_reduce("Reduce.WarpShuffles") + "; twice in a row, " +
                 block_twice("Reduce.BlockReduceTwiceInARow");
        }},
       {"reduction-final", reduction_final},
       {"transpose", transpose_gpu},
       {"sgemm", sgemm_gpu},
       {"softmax", softmax_gpu},
       {"layernorm", layernorm_gpu},
       {"layernorm-backward", layernorm_backward_gpu},
       {"bias-gelu", bias_gelu_gpu}});
}
