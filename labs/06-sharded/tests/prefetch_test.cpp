// TODO 5: prefetch. With a prefetch distance of 1 the all-gather of the unit that computes next
// runs, async, while the current unit computes, it costs exactly one extra unit of memory, training
// stays bit for bit DDP's, and on the reference cluster the simulated timeline hides most of the
// gathers behind compute (none without prefetch). The order, holding, memory and timeline checks
// run two steps on the same model and Fsdp and check each step: a prefetch that happens in the
// first step only (state kept across steps) gathers the second step just in time, right weights and
// no overlap.
#include <gtest/gtest.h>

#include <iostream>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "fsdp_step.h"
#include "gtl/distributed/timeline.h"
#include "gtl/distributed/timeline_svg.h"
#include "lab06_cases.h"

namespace lab06 {
namespace {

using testing::bitwise_diff;

TEST(Prefetch, TrainsBitForBitLikeDdpOnOneToFiveRanks) {
  gtl::judge::Outputs out("Prefetch.TrainsBitForBitLikeDdpOnOneToFiveRanks");
  TrainConfig config;
  config.prefetch = 1;
  for (int n = 1; n <= 5; ++n) {
    const std::vector<TrainResult> ddp = testing::run(n, Stage::Ddp);
    const std::vector<TrainResult> zero = testing::run(n, Stage::Zero3, config);
    lab06_cases::record_runs(out, zero);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(bitwise_diff(zero[r].weights, ddp[r].weights), "")
          << "N " << n << ", rank " << r << ": FSDP with prefetch 1 must train as DDP does. "
          << "gather(u) waits for u's prefetched all-gather before u computes";
    }
  }
}

// The steps the order, holding, memory and timeline checks run on one model and Fsdp: the second
// shows prefetch state kept from the first.
constexpr int kSteps = 2;

// What to revisit when step k (0-based) of a run breaks the rule every step must keep.
std::string step_hint(std::size_t k) {
  return k == 0 ? std::string()
                : ". Every step must prefetch as the first does: what a step leaves behind (a unit "
                  "marked prefetched, a Work in flight) must not stop step " +
                      std::to_string(k + 1) +
                      "'s prefetches, so the prefetch state must be reset for every step";
}

// Each step's timeline by the order's rules at prefetch distance 1 (fsdp_step.h's order_problem),
// recorded for the judge (step after step); a break names the step, the line, what was seen
// and the property that failed.
void expect_prefetch_order(const std::string& test, const std::vector<testing::FsdpStep>& steps,
                           const std::string& input) {
  gtl::judge::Outputs out(test);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const std::vector<std::string> got = testing::timeline_of(steps[k]);
    lab06_cases::record_lines(out, got);
    EXPECT_EQ(testing::order_problem(steps[k], /*distance=*/1), "")
        << input << ", step " << k + 1 << " of " << steps.size() << " on one Fsdp: rank 0's "
        << "gathers, reduce-scatters and unit computations, in order: "
        << ::testing::PrintToString(got) << ". Revisit which hooks call prefetch, for which unit, "
        << "and what gather(u) does with a unit in flight (TODO 5)" << step_hint(k);
  }
}

TEST(Prefetch, IssuesTheNextUnitsGatherBeforeTheCurrentUnitComputes) {
  expect_prefetch_order("Prefetch.IssuesTheNextUnitsGatherBeforeTheCurrentUnitComputes",
                        testing::fsdp_steps(2, lab_model(), 4, /*prefetch=*/1, kSteps),
                        "N 2, the lab model");
}

TEST(Prefetch, HoldsTheComputingUnitAndTheNextOne) {
  const std::vector<testing::FsdpStep> steps =
      testing::fsdp_steps(3, lab_model(), 4, /*prefetch=*/1, kSteps);
  gtl::judge::Outputs out("Prefetch.HoldsTheComputingUnitAndTheNextOne");
  for (std::size_t k = 0; k < steps.size(); ++k) {
    lab06_cases::record_seen(out, steps[k].seen);
    const int64_t units = static_cast<int64_t>(steps[k].padded.size());
    for (const testing::Seen& s : steps[k].seen) {
      std::set<int64_t> expected;
      if (s.hook == "before_forward") expected = {s.unit, std::min(s.unit + 1, units - 1)};
      if (s.hook == "before_backward") expected = {s.unit, std::max<int64_t>(s.unit - 1, 0)};
      if (s.hook == "after_forward" && s.unit + 1 < units) expected = {s.unit + 1};
      if (s.hook == "after_backward" && s.unit > 0) expected = {s.unit - 1};
      EXPECT_EQ(::testing::PrintToString(s.with_values), ::testing::PrintToString(expected))
          << "step " << k + 1 << " of " << steps.size() << " on one Fsdp, at " << s.hook
          << " of unit " << s.unit << ": the units with full values. Prefetch distance 1 holds "
          << "the computing unit and the next one in its direction, no more" << step_hint(k);
    }
  }
}

TEST(Prefetch, CostsExactlyOneExtraUnitOfMemory) {
  const int n = 3;
  const std::vector<testing::FsdpStep> jits =
      testing::fsdp_steps(n, lab_model(), 4, /*prefetch=*/0, kSteps);
  const std::vector<testing::FsdpStep> pres =
      testing::fsdp_steps(n, lab_model(), 4, /*prefetch=*/1, kSteps);
  gtl::judge::Outputs out("Prefetch.CostsExactlyOneExtraUnitOfMemory");
  for (std::size_t k = 0; k < pres.size(); ++k) {
    const testing::FsdpStep &jit = jits[k], &pre = pres[k];
    ASSERT_EQ(pre.seen.size(), jit.seen.size())
        << "step " << k + 1 << ": the same hooks fire with and without prefetch";
    const int64_t units = static_cast<int64_t>(pre.padded.size());
    for (std::size_t i = 0; i < pre.seen.size(); ++i) {
      const testing::Seen& s = pre.seen[i];
      if (s.hook != "before_forward" && s.hook != "before_backward") continue;
      const int64_t next = s.hook == "before_forward" ? s.unit + 1 : s.unit - 1;
      const int64_t expected =
          next >= 0 && next < units ? 4 * pre.padded[static_cast<std::size_t>(next)] : 0;
      out.record(s.allocated - jit.seen[i].allocated);
      EXPECT_EQ(s.allocated - jit.seen[i].allocated, expected)
          << "step " << k + 1 << " of " << pres.size() << " on one Fsdp, rank 0 at " << s.hook
          << " of unit " << s.unit << ": prefetch 1 must hold exactly the next unit's full "
          << "values (" << expected << " B) more than gathering just in time, got "
          << s.allocated - jit.seen[i].allocated << " B" << step_hint(k);
    }
  }
}

// The peak of a training step with prefetch 1 stays within the shards + the two largest units'
// full values + the largest unit's full gradient + DDP's activations.
TEST(Prefetch, PeakIsTheShardsPlusTwoUnitsPlusActivations) {
  const int n = 3;
  TrainConfig with;
  with.prefetch = 1;
  const std::vector<TrainResult> ddp = testing::run(n, Stage::Ddp);
  const std::vector<TrainResult> pre = testing::run(n, Stage::Zero3, with);
  gtl::judge::Outputs out("Prefetch.PeakIsTheShardsPlusTwoUnitsPlusActivations");
  std::vector<int64_t> unit_bytes;
  for (int64_t numel : testing::unit_numels(lab_model())) {
    unit_bytes.push_back(4 * gtl::nn::ShardLayout(numel, n).padded_numel());
  }
  std::sort(unit_bytes.rbegin(), unit_bytes.rend());
  for (int r = 0; r < n; ++r) {
    const int64_t activations = ddp[r].peak_bytes - ddp[r].persistent_bytes;
    const int64_t shards =
        expected_persistent_bytes(Stage::Zero3, testing::unit_numels(lab_model()), n, r);
    const int64_t bound = shards + 2 * unit_bytes[0] + unit_bytes[1] + activations;
    lab06_cases::record_peak(out, pre[r]);
    EXPECT_LE(pre[r].peak_bytes, bound)
        << "rank " << r << ": the peak with prefetch 1 must stay within the shards + two "
        << "units' full values + one unit's full gradient + DDP's activations";
  }
}

// The fraction of rank `rank`'s all-gather time that overlaps compute in a simulated timeline (the
// timeline's own hidden_comm_fraction counts the reduce-scatters too, which this lab leaves
// synchronous).
double hidden_gather_fraction(const gtl::dist::Timeline& timeline, int rank) {
  const auto& intervals = timeline.ranks[static_cast<std::size_t>(rank)].intervals;
  double busy = 0, hidden = 0;
  for (const gtl::dist::Interval& g : intervals) {
    if (g.category != gtl::dist::Category::Communication || g.op != "all_gather") continue;
    busy += g.duration();
    for (const gtl::dist::Interval& c : intervals) {
      if (c.category != gtl::dist::Category::Compute) continue;
      hidden += std::max(0.0, std::min(g.end, c.end) - std::max(g.start, c.start));
    }
  }
  return busy > 0 ? hidden / busy : 1.0;
}

// Bars set from the solution's figures on the reference model and cluster (README: 0.73 of the
// gathers hidden with prefetch, 0.00 without), with margin.
constexpr double kPrefetchHiddenBar = 0.6;
constexpr double kJustInTimeHiddenMax = 0.05;

TEST(Prefetch, HidesGathersBehindComputeOnTheReferenceCluster) {
  gtl::judge::Outputs out("Prefetch.HidesGathersBehindComputeOnTheReferenceCluster");
  // The second of two steps on one Fsdp: the steady state, where a prefetch kept from the first
  // step would show as gathers just in time.
  const auto timeline = [&out](int prefetch) {
    const auto traces =
        testing::fsdp_steps(2, reference_model(), kReferenceBatchPerRank, prefetch, kSteps)
            .back()
            .traces;
    lab06_cases::record_traces(out, traces);
    return gtl::dist::simulate_timeline(traces, reference_cluster());
  };
  const gtl::dist::Timeline pre = timeline(1), jit = timeline(0);
  for (const gtl::dist::Timeline* t : {&pre, &jit}) {
    for (const gtl::dist::RankTimeline& rank : t->ranks) {
      ASSERT_TRUE(std::any_of(rank.intervals.begin(), rank.intervals.end(),
                              [](const gtl::dist::Interval& i) { return i.op == "all_gather"; }))
          << "a step of FSDP without any all-gather: do TODO 4 first (gather each unit before "
             "its forward and its backward), then prefetch";
    }
  }
  const double hidden = std::min(hidden_gather_fraction(pre, 0), hidden_gather_fraction(pre, 1));
  const double jit_hidden =
      std::max(hidden_gather_fraction(jit, 0), hidden_gather_fraction(jit, 1));
  out.record(hidden);
  out.record(jit_hidden);
  out.record(pre.step_time());
  out.record(jit.step_time());
  std::cout << "[ figures  ] all-gather time hidden: prefetch " << hidden << ", just in time "
            << jit_hidden << "; all communication hidden: prefetch "
            << pre.world().hidden_comm_fraction.min << "; step time prefetch "
            << pre.step_time() * 1e6 << " us, just in time " << jit.step_time() * 1e6 << " us\n";
  EXPECT_GE(hidden, kPrefetchHiddenBar)
      << "FSDP with prefetch 1 on the reference cluster must hide at least " << kPrefetchHiddenBar
      << " of its all-gather time behind compute in the second of two steps on one Fsdp, got "
      << hidden << ": revisit when the next unit's gather is issued relative to the current "
      << "unit's compute, where it is waited for, and whether the second step starts from the "
      << "same state as the first";
  EXPECT_LE(jit_hidden, kJustInTimeHiddenMax) << "synchronous gathers hide nothing";
  EXPECT_LT(pre.step_time(), jit.step_time()) << "prefetching must shorten the simulated step";
  if (const char* dir = std::getenv("LAB06_FIGURES_DIR")) {  // regenerates the handout's figures
    write_chrome_trace(pre, std::string(dir) + "/fsdp_prefetch.json");
    write_chrome_trace(jit, std::string(dir) + "/fsdp_just_in_time.json");
    write_timeline_svg(pre, std::string(dir) + "/fsdp_prefetch.svg",
                       "FSDP, prefetch 1: the next unit gathered while one computes (simulated)");
    write_timeline_svg(jit, std::string(dir) + "/fsdp_just_in_time.svg",
                       "FSDP, just in time: each unit gathered when needed (simulated)");
  }
}

// Training and the order of issued all-gathers on a seeded model (width, depth, weights), data seed
// and world.
TEST(Prefetch, TrainsBitForBitLikeDdpOnASeededModelAndData) {
  const std::string test = "Prefetch.TrainsBitForBitLikeDdpOnASeededModelAndData";
  gtl::judge::Outputs out(test);
  lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  c.config.prefetch = 1;
  const std::vector<TrainResult> ddp = testing::run(c.world, Stage::Ddp, c.config);
  const std::vector<TrainResult> zero = testing::run(c.world, Stage::Zero3, c.config);
  lab06_cases::record_runs(out, zero);
  for (int r = 0; r < c.world; ++r) {
    EXPECT_EQ(bitwise_diff(zero[r].weights, ddp[r].weights), "")
        << lab06_cases::describe(c) << ", rank " << r
        << ": FSDP with prefetch 1 must train as DDP does";
  }
}

TEST(Prefetch, IssuesTheNextUnitsGatherBeforeTheCurrentUnitComputesOnASeededModel) {
  const std::string test =
      "Prefetch.IssuesTheNextUnitsGatherBeforeTheCurrentUnitComputesOnASeededModel";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  expect_prefetch_order(
      test,
      testing::fsdp_steps(c.world, c.config.model, lab06_cases::seeded_batch(test), 1, kSteps),
      lab06_cases::describe(c));
}

}  // namespace
}  // namespace lab06
