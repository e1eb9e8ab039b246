// Lab 09's judge (docs/grader.md, "The judge"): built from the course alone (the lab's header and
// harness, the tests' case header, the core), never from the student's files. It draws the same
// inputs from the grading seed and recomputes what the tests recorded:
//   occupancy         the core's calculator (gtl/runtime/occupancy.h) on every recorded kernel
//   roofline          its own walk of the model with the core's cost model, at the case's peak
//   step-figures      the sums, MFU and fraction from the case's ops
//   fast-loop-*       the provided slow loop rerun (bit for bit, the same log lines), and
//                     ceil(N / K) host synchronisations
//   graph-*           the trainee's own eager steps rerun (bit for bit), and one graph launch, no
//                     sync, no allocation and the same output buffer after the first step
//   faster-*          the provided slow evaluation step rerun (bit for bit), the budget of launches
//                     and allocations measured on the core's ops, and the before/after report
//                     recomputed from the slow step's counts and the fast step's recorded ones
// Built twice (labs/09-performance/CMakeLists.txt): lab09_judge on the core (CPU checks, and the
// GPU checks on a GPU) and lab09_emulated_judge on the emulated core (the emulated checks, whose
// losses are the emulator's).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/host_sync.h"
#include "gtl/runtime/launch_count.h"
#include "gtl/runtime/occupancy.h"
#include "gtl_judge.h"
#include "lab09_cases.h"
#include "performance.h"

namespace {

using gtl::judge::Recorded;
using gtl::judge::Rejection;

// The slow loop prints its log lines; the grader reads the judge's first line as its verdict, so
// the judge's own runs print nowhere.
class Silenced {
 public:
  Silenced() {
    std::fflush(stdout);
    saved_ = dup(1);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    close(null);
  }
  ~Silenced() {
    std::fflush(stdout);
    dup2(saved_, 1);
    close(saved_);
  }
  Silenced(const Silenced&) = delete;
  Silenced& operator=(const Silenced&) = delete;

 private:
  int saved_;
};

std::string occupancy_line(const gtl::Occupancy& o) {
  return std::to_string(o.by_warps) + " " + std::to_string(o.by_blocks) + " " +
         std::to_string(o.by_registers) + " " + std::to_string(o.by_shared_memory) + " " +
         std::to_string(o.blocks_per_sm) + " " + std::to_string(o.warps_per_sm) + " " +
         std::to_string(o.max_warps_per_sm) + " " + std::to_string(static_cast<int>(o.limited_by));
}

void expect_occupancy(Recorded& r, const gtl::KernelResources& k, const gtl::SmLimits& sm) {
  const std::string what = std::to_string(k.threads_per_block) + " threads, " +
                           std::to_string(k.registers_per_thread) + " registers, " +
                           std::to_string(k.shared_bytes_per_block) + " shared bytes on " + sm.arch;
  gtl::judge::expect_equal(r.line(what), occupancy_line(gtl::theoretical_occupancy(k, sm)),
                           r.test() + ": occupancy of " + what +
                               " (by warps, blocks, registers, shared, blocks, warps, slots, "
                               "limit)");
}

std::string occupancy() {
  {
    Recorded r("Occupancy.WorkedCasesOnSm80AndSm90");
    for (const lab09_cases::Worked& c : lab09_cases::kWorked)
      for (const gtl::SmLimits& sm : {gtl::SmLimits::sm_80(), gtl::SmLimits::sm_90()})
        expect_occupancy(r, c.kernel, sm);
  }
  int kernels = 0;
  {
    Recorded r("Occupancy.SeededKernelsOnSm80Sm90AndAMadeUpSm");
    for (const lab09_cases::SeededSm& c : lab09_cases::seeded_occupancy_cases())
      for (const gtl::KernelResources& k : c.kernels) expect_occupancy(r, k, c.sm), ++kernels;
  }
  Recorded r("Occupancy.RefusesAnEmptyBlockOrNegativeResources");
  gtl::judge::expect_equal(r.next<int>("refusals"), 3, r.test() + ": refused kernels");
  return "the worked cases and " + std::to_string(kernels) +
         " seeded kernels agree with the "
         "core's calculator";
}

bool close(double got, double want, double rel) {
  return std::fabs(got - want) <= rel * std::fabs(want);
}

// The judge's roofline of a step: every module's own work in both passes, where not zero.
void roofline_rows(Recorded& r, const lab09_cases::RooflineCase& c) {
  const auto model = lab09_cases::forward_once(c.model);
  std::map<std::string, std::pair<gtl::nn::ComputeCost, const gtl::nn::Module*>> rows;
  std::function<void(const gtl::nn::Module&)> visit = [&](const gtl::nn::Module& m) {
    const gtl::nn::ComputeCost f = m.forward_cost(m.last_input_shape());
    const gtl::nn::ComputeCost b = m.backward_cost(m.last_input_shape());
    if (f.flops != 0 || f.bytes != 0) rows[m.path() + " forward"] = {f, &m};
    if (b.flops != 0 || b.bytes != 0) rows[m.path() + " backward"] = {b, &m};
    for (const auto& child : m.children()) visit(*child);
  };
  visit(*model);
  const double ridge = c.peak.flops_per_s / c.peak.bytes_per_s;
  // The test records the rows sorted by path, then pass; so does this map ("<path> <pass>": a
  // space sorts before every character of a path).
  for (const auto& [key, row] : rows) {
    const gtl::nn::ComputeCost& cost = row.first;
    gtl::judge::expect_equal(r.line("a row's key"), key, r.test() + ": the next row");
    const std::string what = r.test() + ": " + key;
    gtl::judge::expect_equal(r.next<double>("flops"), cost.flops, what + " FLOPs");
    gtl::judge::expect_equal(r.next<double>("bytes"), cost.bytes, what + " bytes");
    const double intensity = r.next<double>("intensity");
    if (!close(intensity, cost.flops / cost.bytes, 1e-15))
      throw Rejection(what + " intensity: the student's code gave " + gtl::judge::show(intensity) +
                      ", the judge computes " + gtl::judge::show(cost.flops / cost.bytes));
    const int compute_bound = r.next<int>("compute_bound");
    if (!close(cost.flops / cost.bytes, ridge, 1e-9))
      gtl::judge::expect_equal(compute_bound, cost.flops / cost.bytes >= ridge ? 1 : 0,
                               what + " compute-bound");
    const double bound = r.next<double>("bound_s");
    const double want = std::max(cost.flops / c.peak.flops_per_s, cost.bytes / c.peak.bytes_per_s);
    if (!close(bound, want, 1e-15))
      throw Rejection(what + " bound_s: the student's code gave " + gtl::judge::show(bound) +
                      ", the judge computes " + gtl::judge::show(want));
  }
}

std::string roofline() {
  {
    Recorded r("Roofline.WorkedMlpAtTheMeasuredH200Peaks");
    roofline_rows(r, lab09_cases::worked_roofline_case());
  }
  Recorded r("Roofline.SeededModelsAndPeaks");
  for (const lab09_cases::RooflineCase& c : lab09_cases::seeded_roofline_cases())
    roofline_rows(r, c);
  return "every op of the worked and seeded steps as the judge's roofline";
}

// The four figures of 5c. The likely mistakes get their own message: the bound taken as the
// larger of the step's total compute and total memory times, FLOPs or bound with the recomputed
// forwards counted the wrong way.
std::string step_figures() {
  Recorded r("StepFigures.SeededOps");
  for (const lab09_cases::FiguresCase& c : lab09_cases::seeded_figures_cases()) {
    double model_flops = 0, all_flops = 0, bound = 0, model_bound = 0, compute_s = 0, memory_s = 0;
    for (const lab09::OpRoofline& op : c.ops) {
      all_flops += op.flops;
      bound += op.bound_s;
      compute_s += op.flops / c.peak.flops_per_s;
      memory_s += op.bytes / c.peak.bytes_per_s;
      if (!op.recomputed) model_flops += op.flops, model_bound += op.bound_s;
    }
    const std::string what =
        r.test() + ", " + std::to_string(c.ops.size()) + " ops (" +
        std::to_string(std::count_if(c.ops.begin(), c.ops.end(),
                                     [](const lab09::OpRoofline& op) { return op.recomputed; })) +
        " recomputed)";
    const double flops = r.next<double>("flops");
    if (!close(flops, model_flops, 1e-12))
      throw Rejection(
          what + ": flops: the student's code gave " + gtl::judge::show(flops) +
          ", the judge computes " + gtl::judge::show(model_flops) +
          (close(flops, all_flops, 1e-12)
               ? ": the recomputed forwards are counted; MFU counts what the model needs, so "
                 "that runs with and without checkpointing compare (counting the GPU's extra "
                 "work too is another figure, hardware FLOPs utilisation)"
               : ""));
    const double bound_s = r.next<double>("bound_s");
    if (!close(bound_s, bound, 1e-12))
      throw Rejection(
          what + ": bound_s: the student's code gave " + gtl::judge::show(bound_s) +
          ", the judge computes " + gtl::judge::show(bound) +
          (close(bound_s, std::max(compute_s, memory_s), 1e-12)
               ? ": the larger of the step's total compute and memory times assumes one op's "
                 "arithmetic hides another op's memory traffic; on one stream each kernel "
                 "finishes before the next starts, so each op is held by its own ceiling"
           : close(bound_s, model_bound, 1e-12)
               ? ": the recomputed forwards are left out; the GPU runs them, so they take time"
               : ""));
    const double want[] = {flops / (c.measured_s * c.peak.flops_per_s), bound_s / c.measured_s};
    const char* names[] = {"mfu", "fraction_of_bound"};
    for (int i = 0; i < 2; ++i) {
      const double got = r.next<double>(names[i]);
      if (!close(got, want[i], 1e-12))
        throw Rejection(what + ": " + names[i] + ": the student's code gave " +
                        gtl::judge::show(got) + ", the judge computes " +
                        gtl::judge::show(want[i]));
    }
  }
  return "the seeded steps' FLOPs, bounds, MFU and fractions, some steps checkpointed";
}

// ---- TODO 2 ---------------------------------------------------------------------------------

const gtl::Device kGpu = gtl::Device::cuda(0);

// One loop the test recorded against the slow loop rerun on `trainee`; `syncs` checked when asked.
void expect_loop(Recorded& r, lab09::Trainee& trainee, const lab09::LoopConfig& loop,
                 const std::string& what, bool check_syncs) {
  lab09::LoopResult slow;
  {
    const Silenced quiet;
    slow = lab09::slow_loop(trainee, loop);
  }
  const std::vector<float> losses = r.sequence<float>(what + ": losses", slow.losses.size());
  for (size_t i = 0; i < losses.size(); ++i)
    if (!(losses[i] == slow.losses[i]))
      throw Rejection(r.test() + ", " + what + ": the loss of step " + std::to_string(i + 1) +
                      " is " + gtl::judge::show(losses[i]) + ", the slow loop's " +
                      gtl::judge::show(slow.losses[i]));
  gtl::judge::expect_equal(r.next<size_t>("log lines"), slow.log.size(),
                           r.test() + ", " + what + ": log lines");
  for (const std::string& line : slow.log)
    gtl::judge::expect_equal(r.line("a log line"), line, r.test() + ", " + what + ": log line");
  const int64_t syncs = r.next<int64_t>("host syncs");
  if (check_syncs)
    gtl::judge::expect_equal(syncs, (loop.steps + loop.log_every - 1) / loop.log_every,
                             r.test() + ", " + what + ": host synchronisations (one per log line)");
}

std::string fast_loop_losses() {
  Recorded r("FastLoop.SameLossesAndLogLinesAsTheSlowLoop");
  for (const lab09_cases::LoopCase& c : lab09_cases::loop_cases()) {
    lab09::Trainee trainee(c.trainee, kGpu);
    expect_loop(r, trainee, c.loop, c.what, false);
  }
  return "every case's losses and log lines are the slow loop's";
}

std::string fast_loop_syncs() {
  {
    Recorded r("FastLoop.OneHostSyncPerLogLine");
    for (const lab09_cases::LoopCase& c : lab09_cases::loop_cases()) {
      lab09::Trainee trainee(c.trainee, kGpu);
      expect_loop(r, trainee, c.loop, c.what, true);
    }
  }
  Recorded r("FastLoop.TwoCallsInARowContinueTraining");
  const lab09_cases::LoopCase c = lab09_cases::loop_cases().back();
  lab09::Trainee trainee(c.trainee, kGpu);
  expect_loop(r, trainee, c.loop, c.what + ", first call", true);
  expect_loop(r, trainee, {c.loop.log_every + 1, c.loop.log_every}, c.what + ", second call", true);
  return "one host synchronisation per log line, the slow loop's losses and log lines";
}

// ---- TODO 4 ---------------------------------------------------------------------------------

std::string graph_replay() {
  Recorded r("GraphedStep.ReplaysEqualEagerStepsBitwise");
  const lab09_cases::GraphCase c = lab09_cases::graph_case();
  lab09::Trainee eager(c.trainee, kGpu);
  for (int64_t i = 0; i < c.steps; ++i) {
    const std::vector<float> loss = eager.step(eager.x(i), eager.labels(i)).to_vector();
    const std::string what = "step " + std::to_string(i + 1);
    const std::vector<float> got = r.sequence<float>(what + ": loss", loss.size());
    if (!(got[0] == loss[0]))
      throw Rejection(r.test() + ", " + what + ": the loss is " + gtl::judge::show(got[0]) +
                      ", the eager step's " + gtl::judge::show(loss[0]));
    r.expect_digest(eager.weights().to_vector(), what + ": the weights");
  }
  return std::to_string(c.steps) + " steps' losses and weights are the eager steps'";
}

std::string graph_launches() {
  Recorded r("GraphedStep.AfterTheFirstStepOneGraphLaunchAndNothingElse");
  const lab09_cases::GraphCase c = lab09_cases::graph_case();
  const char* names[] = {"kernel launches",       "library calls", "graph launches",
                         "host synchronisations", "allocations",   "the same output buffer"};
  const int64_t want[] = {0, 0, 1, 0, 0, 1};
  for (int64_t i = 1; i < c.steps; ++i)
    for (int k = 0; k < 6; ++k)
      gtl::judge::expect_equal(r.next<int64_t>(names[k]), want[k],
                               r.test() + ": step " + std::to_string(i + 1) + ", " + names[k]);
  return "after the first step, one graph launch and nothing else, every step";
}

// ---- TODO 6 ---------------------------------------------------------------------------------

// What one call cost: kernels, library calls, graph launches, host synchronisations, allocations.
using Counts = std::array<double, 5>;
const char* const kCountNames[] = {"kernels", "library", "graphs", "host_syncs", "allocations"};

template <class F>
Counts count(const F& f) {
  const auto allocator = gtl::current_allocator(kGpu);
  const gtl::LaunchCounts l = gtl::launch_counts();
  const gtl::HostSyncCounts s = gtl::host_sync_counts();
  const int64_t a = allocator->stats().num_allocs;
  f();
  const gtl::LaunchCounts d = gtl::launch_counts() - l;
  return {static_cast<double>(d.kernels), static_cast<double>(d.library),
          static_cast<double>(d.graphs), static_cast<double>((gtl::host_sync_counts() - s).total()),
          static_cast<double>(allocator->stats().num_allocs - a)};
}

Counts next_counts(Recorded& r, const std::string& what) {
  Counts c;
  for (int k = 0; k < 5; ++k) c[k] = r.next<double>(what + " " + kCountNames[k]);
  return c;
}

std::string show_counts(const Counts& c) {
  std::string s = "{";
  for (int k = 0; k < 5; ++k)
    s += (k ? ", " : "") + std::string(kCountNames[k]) + " " + gtl::judge::show(c[k]);
  return s + "}";
}

bool close_counts(const Counts& got, const Counts& want) {
  for (int k = 0; k < 5; ++k)
    if (!(std::fabs(got[k] - want[k]) <= 1e-12 * std::fabs(want[k]))) return false;
  return true;
}

// The mean of calls [from, calls.size()), or their sum.
Counts over(const std::vector<Counts>& calls, size_t from, bool mean) {
  Counts c{};
  for (size_t i = from; i < calls.size(); ++i)
    for (int k = 0; k < 5; ++k) c[k] += calls[i][k];
  if (mean)
    for (double& v : c) v /= static_cast<double>(calls.size() - from);
  return c;
}

std::string faster_result() {
  Recorded r("FasterStep.SameLossAsTheSlowStepBitwise");
  int64_t calls = 0;
  for (const lab09_cases::FasterCase& c : lab09_cases::faster_cases()) {
    const lab09::Head head(c.head, kGpu);
    for (int64_t i = 0; i < c.steps; ++i, ++calls) {
      const float want = lab09::slow_eval_step(head, head.x(i), head.labels(i));
      const float got = r.next<float>("a loss");
      if (std::memcmp(&got, &want, sizeof got) != 0)
        throw Rejection(r.test() + ", " + c.what + ", call " + std::to_string(i + 1) +
                        ": the loss is " + gtl::judge::show(got) + ", the slow step's " +
                        gtl::judge::show(want));
    }
  }
  return std::to_string(calls) + " losses are the slow step's, bit for bit";
}

std::string faster_budgets() {
  Recorded r("FasterStep.WithinTheBudgetFromTheSecondCall");
  for (const lab09_cases::FasterCase& c : lab09_cases::faster_cases()) {
    const lab09::Head head(c.head, kGpu);
    const Counts floor = count(lab09_cases::faster_floor(head, c));
    // kernels: the GELU's, the cross-entropy's and one a bias; one library call a GEMM; no graph,
    // no wait; allocations: the GELU's and the cross-entropy's.
    const Counts budget = {floor[0] + 2, 2, 0, 0, floor[4]};
    for (int64_t i = 1; i < c.steps; ++i) {
      const std::string what = c.what + ", call " + std::to_string(i + 1);
      const Counts got = next_counts(r, what);
      for (int k = 0; k < 5; ++k)
        if (!(got[k] <= budget[k]))
          throw Rejection(r.test() + ", " + what + ": " + kCountNames[k] + " " +
                          gtl::judge::show(got[k]) + ", the budget " + gtl::judge::show(budget[k]));
    }
  }
  return "every call after the first within the budget of launches and allocations, no wait";
}

std::string faster_report() {
  Recorded r("SpeedReport.CountsBothStepsPerStepInTheSteadyState");
  for (const lab09_cases::FasterCase& c : lab09_cases::faster_cases()) {
    const lab09::Head head(c.head, kGpu);
    std::vector<Counts> slow, fast;
    for (int64_t i = 0; i < c.steps; ++i)
      slow.push_back(count([&] { (void)lab09::slow_eval_step(head, head.x(i), head.labels(i)); }));
    // The "after" step is the checks' own: the judge counts it itself (what the test recorded of
    // it is read and set aside).
    const lab09::CountedStep step = lab09_cases::test_step(head);
    for (int64_t i = 0; i < c.steps; ++i) {
      (void)next_counts(r, c.what + ", the test step's call " + std::to_string(i + 1));
      fast.push_back(count([&] { step(i); }));
    }
    const Counts before = next_counts(r, "report.before"), after = next_counts(r, "report.after");
    const Counts want_before = over(slow, 1, true), want_after = over(fast, 1, true);
    if (close_counts(before, want_before) && close_counts(after, want_after)) continue;
    const auto both = [&](size_t from, bool mean) {
      return close_counts(before, over(slow, from, mean)) &&
             close_counts(after, over(fast, from, mean));
    };
    const std::string why =
        close_counts(before, want_after) && close_counts(after, want_before)
            ? ": before and after are swapped: before is the first step given, after the second"
        : both(0, true)
            ? ": the first call is counted; it is the warm-up (it sets up what later calls "
              "reuse), and a profile of the steady state leaves it out"
        : both(1, false) || both(0, false)
            ? ": these are totals over the calls; the report is per step"
        : close_counts(before, want_before)
            ? ": after is not what the second step costs a call in the steady state"
            : ": before is not what the first step costs a call in the steady state";
    throw Rejection(r.test() + ", " + c.what + ": the report says before " + show_counts(before) +
                    ", after " + show_counts(after) + "; the judge counts before " +
                    show_counts(want_before) + ", after " + show_counts(want_after) + why +
                    " (TODO 6b)");
  }
  return "both rows of every report are the steps' counts per call in the steady state";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(
      argc, argv,
      {{"occupancy", occupancy},
       {"roofline", roofline},
       {"step-figures", step_figures},
       {"fast-loop-losses", fast_loop_losses},
       {"fast-loop-syncs", fast_loop_syncs},
       {"fast-loop-gpu", [] { return fast_loop_losses() + "; " + fast_loop_syncs(); }},
       {"graph-replay", graph_replay},
       {"graph-launches", graph_launches},
       {"graph-gpu", [] { return graph_replay() + "; " + graph_launches(); }},
       {"faster-result", faster_result},
       {"faster-budgets", faster_budgets},
       {"faster-report", faster_report},
       {"faster-gpu",
        [] { return faster_result() + "; " + faster_budgets() + "; " + faster_report(); }}});
}
