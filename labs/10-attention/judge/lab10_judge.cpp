// The judge of lab 10 (docs/grader.md, "The judge"): built from the course alone (the lab's test
// cases, tests/attention_cases.h), never from the student's files. gtl-grade runs
// `lab10_judge <check>` after the check's tests; each case reads what those tests recorded
// (gtl_judge_output.h): the outputs of the TODO's kernels on the tests' inputs, the seeded ones
// included. It recomputes the double-precision references and compares each element with its
// derived tolerance, as the tests do.
#include <cmath>
#include <string>
#include <vector>

#include "attention_cases.h"
#include "gemm_cases.h"
#include "gtl_judge.h"

namespace {

using gtl::judge::Recorded;
using gtl::judge::Rejection;
using namespace lab10_cases;

// Rejects unless every element of `got` is within its tolerance of `want` (NaN fails).
void expect_within(const std::vector<double>& want, const std::vector<double>& tolerance,
                   const std::vector<float>& got, const std::string& what) {
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(want[i] - got[i]) <= tolerance[i]))
      throw Rejection(what + ", element " + std::to_string(i) + ": the student's code gave " +
                      gtl::judge::show(got[i]) + ", the judge computes " +
                      gtl::judge::show(want[i]) + " (tolerance " + gtl::judge::show(tolerance[i]) +
                      ")");
}

std::string naive(const std::string& test, const std::vector<Case>& all) {
  Recorded r(test);
  int n = 0;
  for (const Case& c : all) {
    const Reference want = reference(c, inputs(c));
    const std::string what = test + ", " + describe(c);
    expect_within(want.o, want.o_tol, r.sequence<float>(what + ", o", want.o.size()), what + ", o");
    ++n;
  }
  return std::to_string(n) + " cases right";
}

std::string forward(const std::string& test, const std::vector<Case>& all) {
  Recorded r(test);
  int n = 0;
  for (const Case& c : all) {
    const Reference want = reference(c, inputs(c));
    const std::string what = test + ", " + describe(c);
    expect_within(want.o, want.o_tol, r.sequence<float>(what + ", o", want.o.size()), what + ", o");
    expect_within(want.lse, want.lse_tol, r.sequence<float>(what + ", lse", want.lse.size()),
                  what + ", lse");
    ++n;
  }
  return std::to_string(n) + " cases right, o and lse";
}

std::string backward(const std::string& test, const std::vector<Case>& all) {
  Recorded r(test);
  int n = 0;
  for (const Case& c : all) {
    const Reference want = reference(c, inputs(c));
    const std::string what = test + ", " + describe(c);
    expect_within(want.dq, want.dq_tol, r.sequence<float>(what + ", dq", want.dq.size()),
                  what + ", dq");
    expect_within(want.dk, want.dk_tol, r.sequence<float>(what + ", dk", want.dk.size()),
                  what + ", dk");
    expect_within(want.dv, want.dv_tol, r.sequence<float>(what + ", dv", want.dv.size()),
                  what + ", dv");
    ++n;
  }
  return std::to_string(n) + " cases right, dq, dk and dv";
}

// TODO 4's GEMMs: C for every shape, fp16 then bf16, as the tests recorded them.
std::string gemm(const std::string& test, bool gpu) {
  Recorded r(test);
  int n = 0;
  for (bool bf16 : {false, true})
    for (const lab10_gemm_cases::Shape& s :
         gpu ? lab10_gemm_cases::gpu_shapes(test) : lab10_gemm_cases::shapes(test)) {
      const lab10_gemm_cases::Reference want =
          lab10_gemm_cases::reference(s, lab10_gemm_cases::inputs(s, bf16));
      const std::string what = test + ", " + lab10_gemm_cases::describe(s, bf16);
      expect_within(want.c, want.tolerance, r.sequence<float>(what + ", C", want.c.size()),
                    what + ", C");
      ++n;
    }
  return std::to_string(n) + " products right";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(
      argc, argv,
      {{"naive-attention-emulated",
        [] {
          return naive("EmulatedNaiveAttention.MatchesTheReference",
                       cases("EmulatedNaiveAttention", kEmulatedMaxT));
        }},
       {"flash-forward-emulated",
        [] {
          return forward("EmulatedFlashForward.OutputAndLogSumExpMatchTheReference",
                         cases("EmulatedFlashForward", kEmulatedMaxT));
        }},
       {"flash-backward-emulated",
        [] {
          return backward("EmulatedFlashBackward.GradientsMatchTheReference",
                          cases("EmulatedFlashBackward", kEmulatedMaxT));
        }},
       {"naive-attention",
        [] { return naive("NaiveAttention.MatchesTheReference", gpu_cases("NaiveAttention")); }},
       {"flash-forward",
        [] {
          return forward("FlashForward.OutputAndLogSumExpMatchTheReference",
                         gpu_cases("FlashForward"));
        }},
       {"flash-backward",
        [] {
          return backward("FlashBackward.GradientsMatchTheReferenceAndAreDeterministic",
                          gpu_cases("FlashBackward"));
        }},
       {"wmma-tiled-emulated",
        [] { return gemm("EmulatedWmmaGemm.TiledThroughSharedMemory", false); }},
       {"wmma-fast-emulated", [] { return gemm("EmulatedWmmaGemm.Fast", false); }},
       {"wmma-tiled", [] { return gemm("WmmaGemm.TiledThroughSharedMemory", true); }},
       {"wmma-fast", [] { return gemm("WmmaGemm.Fast", true); }}});
}
