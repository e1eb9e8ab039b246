// TODO 6: the bubble of a schedule, on a clock. Expected figures are exact: small integer times
// make every sum exact in double, and GPipe's bubble is (p-1)/(m+p-1) for equal stages. The tests
// run the harness's GPipe and the orders of lab07_schedules.h, not your TODO 4.
// Then the simulated timeline of your executor (TODO 5) on the reference cluster: the core's cost
// model, from the traces of a real step, gives the same bubble within 1%, and the handout's
// Chrome traces.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <mutex>

#include "gtl/distributed/in_process.h"
#include "gtl/distributed/timeline.h"
#include "gtl/distributed/timeline_svg.h"
#include "gtl/runtime/error.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab07_cases.h"
#include "lab07_schedules.h"
#include "lab07_student_call.h"
#include "pipeline.h"
#include "pipeline_training.h"

namespace lab07 {
namespace {

// TODO 6 inside its guard scope (lab07_student_call.h): the core's cost model refuses to run
// while it does. (The timeline of the executor's traces below is simulated outside every scope.)
BubbleReport student_bubbles(const Schedule& schedule, const std::vector<double>& forward_time,
                             const std::vector<double>& backward_time) {
  const auto call = lab07_student_call::todo6();
  return simulate_bubbles(schedule, forward_time, backward_time);
}

double formula(int p, int64_t m) {
  return static_cast<double>(p - 1) / static_cast<double>(m + p - 1);
}

// The report goes to the judge, which simulates the schedule on its own clock.
void expect_formula(const std::string& name, const Schedule& schedule, int p, int64_t m, double f,
                    double b, gtl::judge::Outputs& recorded) {
  const BubbleReport r =
      student_bubbles(schedule, std::vector<double>(p, f), std::vector<double>(p, b));
  lab07_cases::record_report(recorded, r);
  EXPECT_EQ(r.step_time, static_cast<double>(m + p - 1) * (f + b))
      << name << " p = " << p << ", m = " << m << ", forward " << f << ", backward " << b
      << ": the step lasts (m + p - 1) x (forward + backward): the last micro-batch's forward "
      << "crosses p stages, then its backward comes back";
  ASSERT_EQ(r.bubble.size(), static_cast<std::size_t>(p)) << "one bubble per stage";
  ASSERT_EQ(r.busy.size(), static_cast<std::size_t>(p)) << "one busy time per stage";
  for (int s = 0; s < p; ++s) {
    EXPECT_EQ(r.busy[static_cast<std::size_t>(s)], static_cast<double>(m) * (f + b))
        << name << " stage " << s << ": busy m x (forward + backward)";
    EXPECT_DOUBLE_EQ(r.bubble[static_cast<std::size_t>(s)], formula(p, m))
        << name << " p = " << p << ", m = " << m << ", forward " << f << ", backward " << b
        << ", stage " << s << ": idle fraction 1 - busy / step_time = (p-1)/(m+p-1)";
  }
}

TEST(Bubbles, UnitCostsGiveTheFormula) {
  gtl::judge::Outputs recorded("Bubbles.UnitCostsGiveTheFormula");
  for (const auto& [p, m] : std::vector<std::pair<int, int64_t>>{
           {1, 4}, {2, 4}, {3, 5}, {4, 1}, {4, 2}, {4, 4}, {4, 8}, {5, 7}}) {
    expect_formula("GPipe", gpipe_schedule(p, m), p, m, 1, 1, recorded);
  }
  // Both neighbours sending at once (lab07_schedules.h): another order with the same bubble.
  expect_formula("both_neighbours_send", testing::both_neighbours_send(), 2, 4, 1, 1, recorded);
}

TEST(Bubbles, BackwardTwiceAsLongAsForwardKeepsTheFraction) {
  gtl::judge::Outputs recorded("Bubbles.BackwardTwiceAsLongAsForwardKeepsTheFraction");
  for (const auto& [p, m] : std::vector<std::pair<int, int64_t>>{{2, 4}, {3, 5}, {4, 2}, {4, 8}}) {
    expect_formula("GPipe", gpipe_schedule(p, m), p, m, 1, 2, recorded);
  }
  expect_formula("both_neighbours_send", testing::both_neighbours_send(), 2, 4, 1, 2, recorded);
}

// Times drawn from the grading seed: equal stages give the formula exactly; stages of their own
// speeds (GPipe) keep every stage busy m x (forward + backward), the bubble 1 - busy / step, and a
// step no shorter than the slowest stage's work plus the first forward reaching it and the last
// backward leaving it. The judge recomputes every figure on its own clock.
TEST(Bubbles, SeededTimesAndShapes) {
  gtl::judge::Outputs recorded("Bubbles.SeededTimesAndShapes");
  for (const lab07_cases::BubbleCase& c : lab07_cases::seeded_bubble_cases()) {
    const Schedule schedule = gpipe_schedule(c.p, c.m);
    const std::string name = "GPipe (" + gtl::test_seed::describe() + ")";
    const bool equal = std::equal(c.forward.begin() + 1, c.forward.end(), c.forward.begin()) &&
                       std::equal(c.backward.begin() + 1, c.backward.end(), c.backward.begin());
    if (equal) {
      expect_formula(name, schedule, c.p, c.m, c.forward[0], c.backward[0], recorded);
      continue;
    }
    const BubbleReport r = student_bubbles(schedule, c.forward, c.backward);
    lab07_cases::record_report(recorded, r);
    ASSERT_EQ(r.busy.size(), static_cast<std::size_t>(c.p)) << name << ": one busy time per stage";
    ASSERT_EQ(r.bubble.size(), static_cast<std::size_t>(c.p)) << name << ": one bubble per stage";
    double before = 0;  // the first forward's time through the stages before s
    for (int s = 0; s < c.p; ++s) {
      const auto at = static_cast<std::size_t>(s);
      const double work = c.forward[at] + c.backward[at];
      EXPECT_EQ(r.busy[at], static_cast<double>(c.m) * work)
          << name << " p = " << c.p << ", m = " << c.m << ", stage " << s
          << ": busy m x (forward + backward)";
      EXPECT_DOUBLE_EQ(r.bubble[at], 1.0 - r.busy[at] / r.step_time)
          << name << " stage " << s << ": idle fraction 1 - busy / step_time";
      EXPECT_GE(r.step_time, before + static_cast<double>(c.m) * work)
          << name << " p = " << c.p << ", m = " << c.m << ", stage " << s
          << ": the step cannot end before the stage's own work and the passes before it";
      before += work;
    }
  }
}

// Worked by hand. GPipe, p = 2, m = 2; stage 0: forward 1, backward 2; stage 1 (twice as slow):
// forward 2, backward 4.
//   stage 0: F0 [0,1]  F1 [1,2]                            B0 [9,11]  B1 [13,15]
//   stage 1:           F0 [1,3]  F1 [3,5]  B0 [5,9]  B1 [9,13]
// Step 15; busy 6 and 12: bubbles 9/15 and 3/15. The slow stage sets the pace.
TEST(Bubbles, ASlowStageSetsThePace) {
  const BubbleReport r = student_bubbles(gpipe_schedule(2, 2), {1, 2}, {2, 4});
  gtl::judge::Outputs recorded("Bubbles.ASlowStageSetsThePace");
  lab07_cases::record_report(recorded, r);
  EXPECT_EQ(r.step_time, 15.0) << "worked example in bubble_test.cpp";
  ASSERT_EQ(r.bubble.size(), 2u);
  EXPECT_EQ(r.busy, (std::vector<double>{6, 12}));
  EXPECT_DOUBLE_EQ(r.bubble[0], 9.0 / 15.0) << "stage 0 waits for the slow stage 1";
  EXPECT_DOUBLE_EQ(r.bubble[1], 3.0 / 15.0);
}

// A valid but poor order: stage 0 waits for each backward before the next forward (no
// pipelining at all): step 4 x (1 + 1) x 2 = 16, each stage busy 8 of it.
TEST(Bubbles, AnUnpipelinedOrderIsNotTheFormula) {
  const Schedule serial = testing::parse({"F0 B0 F1 B1 F2 B2 F3 B3", "F0 B0 F1 B1 F2 B2 F3 B3"});
  const BubbleReport r = student_bubbles(serial, {1, 1}, {1, 1});
  gtl::judge::Outputs recorded("Bubbles.AnUnpipelinedOrderIsNotTheFormula");
  lab07_cases::record_report(recorded, r);
  EXPECT_EQ(r.step_time, 16.0) << "simulate the schedule you are given: F(i+1) on stage 0 waits "
                               << "for B(i), which waits for stage 1";
  ASSERT_EQ(r.bubble.size(), 2u);
  EXPECT_DOUBLE_EQ(r.bubble[0], 0.5);
  EXPECT_DOUBLE_EQ(r.bubble[1], 0.5);
}

TEST(Bubbles, RejectsAScheduleThatCannotRun) {
  gtl::judge::Outputs recorded("Bubbles.RejectsAScheduleThatCannotRun");
  recorded.record(lab07_cases::throws_error([] {
    student_bubbles(testing::parse({"F0 B0 F1 B1", "F0 F1 B0 B1"}), {1, 1}, {1, 1});
  }));
  recorded.record(lab07_cases::throws_error([] {
    student_bubbles(gpipe_schedule(2, 2), {1}, {1, 1});
  }));
  EXPECT_THROW(student_bubbles(testing::parse({"F0 B0 F1 B1", "F0 F1 B0 B1"}), {1, 1}, {1, 1}),
               gtl::Error)
      << "stage 0 waits for B0, stage 1 first for F1: a cycle, not a timeline";
  EXPECT_THROW(student_bubbles(gpipe_schedule(2, 2), {1}, {1, 1}), gtl::Error)
      << "one forward time per stage";
  EXPECT_THROW(student_bubbles(testing::parse({"B0 F0"}), {1}, {1}), gtl::Error)
      << "one stage whose backward 0 comes before its own forward 0: it cannot run (the header's "
      << "section 6 lists what a backward waits for)";
}

// ---- the simulated timeline of your executor on the reference cluster ---------------------------

std::vector<std::vector<gtl::dist::TraceEvent>> reference_traces(int64_t m) {
  const int p = 4;
  const Schedule schedule = gpipe_schedule(p, m);
  std::vector<std::vector<gtl::dist::TraceEvent>> traces(p);
  std::mutex mutex;
  gtl::dist::RunOptions options;
  options.timeout = std::chrono::seconds(20);
  gtl::dist::run_ranks(
      p,
      [&](Communicator& comm) {
        auto events =
            traced_reference_step(comm, schedule[static_cast<std::size_t>(comm.rank())], m);
        std::lock_guard<std::mutex> lock(mutex);
        traces[static_cast<std::size_t>(comm.rank())] = std::move(events);
      },
      options);
  return traces;
}

TEST(PipelineTimeline, GpipeOnTheReferenceClusterShowsTheFormulasBubble) {
  const int p = 4;
  gtl::judge::Outputs recorded("PipelineTimeline.GpipeOnTheReferenceClusterShowsTheFormulasBubble");
  for (const int64_t m : {1, 4, 8}) {
    const std::vector<std::vector<gtl::dist::TraceEvent>> traces = reference_traces(m);
    lab07_cases::record_traces(recorded, traces);
    const gtl::dist::Timeline tl = gtl::dist::simulate_timeline(traces, reference_cluster());
    ASSERT_EQ(tl.ranks.size(), static_cast<std::size_t>(p));
    for (int s = 0; s < p; ++s) {
      const double bubble = tl.ranks[static_cast<std::size_t>(s)].bubble_fraction;
      EXPECT_NEAR(bubble, formula(p, m), 0.01 * formula(p, m))
          << "GPipe p = 4, m = " << m << ", stage " << s << " on the reference cluster: the "
          << "simulated bubble " << bubble << " must be the formula's " << formula(p, m)
          << " within 1% (equal stages, free links): if it is larger, your executor makes a "
          << "stage wait for something the schedule does not need";
    }
    std::cout << "[ figures  ] GPipe p = 4, m = " << m << ": simulated step "
              << tl.step_time() * 1e6 << " us, bubble " << tl.world().bubble_fraction.max
              << " (formula " << formula(p, m) << ")\n";
    if (const char* dir = std::getenv("LAB07_FIGURES_DIR")) {  // regenerates the handout's figures
      const std::string name = std::string(dir) + "/gpipe_p4_m" + std::to_string(m);
      gtl::dist::write_chrome_trace(tl, name + ".json");
      gtl::dist::write_timeline_svg(
          tl, name + ".svg",
          "GPipe, p = 4 stages, m = " + std::to_string(m) + " micro-batches (simulated)");
    }
  }
}

}  // namespace
}  // namespace lab07
