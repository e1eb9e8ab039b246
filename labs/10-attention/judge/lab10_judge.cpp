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
#include "gpt_steps.h"
#include "gtl/memory/caching_allocator.h"
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

// One recorded output of an attention test: its name and where the reference keeps it.
struct Output {
  const char* name;
  std::vector<double> Reference::*value;
  std::vector<double> Reference::*tolerance;
};
const Output kO{"o", &Reference::o, &Reference::o_tol},
    kLse{"lse", &Reference::lse, &Reference::lse_tol},
    kDq{"dq", &Reference::dq, &Reference::dq_tol}, kDk{"dk", &Reference::dk, &Reference::dk_tol},
    kDv{"dv", &Reference::dv, &Reference::dv_tol};

// The outputs a test recorded for every case, in that order, each within its tolerance.
std::string attention(const std::string& test, const std::vector<Case>& all,
                      const std::vector<Output>& outputs) {
  Recorded r(test);
  for (const Case& c : all) {
    const Reference want = reference(c, inputs(c));
    const std::string what = test + ", " + describe(c);
    for (const Output& out : outputs) {
      const std::vector<double>& value = want.*out.value;
      expect_within(value, want.*out.tolerance,
                    r.sequence<float>(what + ", " + out.name, value.size()),
                    what + ", " + out.name);
    }
  }
  std::string names;
  for (const Output& out : outputs) names += std::string(names.empty() ? "" : ", ") + out.name;
  return std::to_string(all.size()) + " cases right: " + names;
}

// TODO 5: the losses of the steps the student's kernels trained (through the harness's
// FlashAttention) against this judge's own run of the reference path on the CPU, and the bytes
// the first step held after its forward against that run's less what P costs and o and lse add.
std::string gpt(const std::string& prefix) {
  using namespace lab10_gpt_cases;
  int n = 0;
  {
    Recorded r(prefix + ".TrainsLikeTheReferencePath");
    for (const GptCase& c : cases(prefix)) {
      std::shared_ptr<gtl::Allocator> alloc = gtl::make_cpu_caching_allocator();
      gtl::AllocatorScope scope(alloc);
      const Steps want = train_steps(c, nullptr, gtl::Device::cpu(), *alloc);
      const std::vector<float> got = r.sequence<float>(describe(c) + ", losses", kSteps);
      for (int step = 0; step < kSteps; ++step)
        if (!(std::fabs(double(got[step]) - want.losses[step]) <=
              kRelative * std::fabs(want.losses[step])))
          throw Rejection(describe(c) + ", step " + std::to_string(step + 1) +
                          ": the student's run gave the loss " + gtl::judge::show(got[step]) +
                          ", the judge's reference path " + gtl::judge::show(want.losses[step]));
      ++n;
    }
  }
  Recorded r(prefix + ".HoldsWhatBackwardNeedsFromTheAllocator");
  for (const GptCase& c : cases(prefix + "Memory")) {
    std::shared_ptr<gtl::Allocator> alloc = gtl::make_cpu_caching_allocator();
    gtl::AllocatorScope scope(alloc);
    const Steps want = train_steps(c, nullptr, gtl::Device::cpu(), *alloc);
    const int64_t bh = c.batch * c.heads;
    const int64_t least = want.held_after_forward - c.layers * 4 * bh * c.t * c.t +
                          c.layers * (4 * bh * c.t * c.head_dim() + 4 * bh * c.t);
    const auto got = r.next<int64_t>(describe(c) + ", bytes held after the forward");
    if (got != least)
      throw Rejection(describe(c) + ": the student's step held " + std::to_string(got) +
                      " bytes after its forward, the judge computes " + std::to_string(least));
  }
  return std::to_string(n) + " GPTs trained like the reference path, holding what they should";
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
          return attention("EmulatedNaiveAttention.MatchesTheReference",
                           cases("EmulatedNaiveAttention", kEmulatedMaxT), {kO});
        }},
       {"flash-forward-emulated",
        [] {
          return attention("EmulatedFlashForward.OutputAndLogSumExpMatchTheReference",
                           cases("EmulatedFlashForward", kEmulatedMaxT), {kO, kLse});
        }},
       {"flash-backward-emulated",
        [] {
          return attention("EmulatedFlashBackward.GradientsMatchTheReference",
                           cases("EmulatedFlashBackward", kEmulatedMaxT), {kDq, kDk, kDv});
        }},
       {"naive-attention",
        [] {
          return attention("NaiveAttention.MatchesTheReference", gpu_cases("NaiveAttention"), {kO});
        }},
       {"flash-forward",
        [] {
          return attention("FlashForward.OutputAndLogSumExpMatchTheReference",
                           gpu_cases("FlashForward"), {kO, kLse});
        }},
       {"flash-backward",
        [] {
          return attention("FlashBackward.GradientsMatchTheReferenceAndAreDeterministic",
                           gpu_cases("FlashBackward"), {kDq, kDk, kDv});
        }},
       {"wmma-tiled-emulated",
        [] { return gemm("EmulatedWmmaGemm.TiledThroughSharedMemory", false); }},
       {"wmma-fast-emulated", [] { return gemm("EmulatedWmmaGemm.Fast", false); }},
       {"wmma-tiled", [] { return gemm("WmmaGemm.TiledThroughSharedMemory", true); }},
       {"gpt-flash-emulated", [] { return gpt("FlashInTheGpt"); }},
       {"gpt-flash", [] { return gpt("FlashInTheGpt"); }},
       {"wmma-fast", [] { return gemm("WmmaGemm.Fast", true); }}});
}
