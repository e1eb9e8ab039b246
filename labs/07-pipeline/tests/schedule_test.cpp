// TODOs 3 and 4: GPipe and 1F1B as data, for every p = 1..4 and m = 1..8 (m < p included) and
// seeded shapes: valid (schedule_problem), GPipe's order, 1F1B's written-out tables and the
// header's properties of 1F1B (three phases, in order, the longest warm-up the memory bound
// allows), and the activations each stage holds at most.
#include <gtest/gtest.h>

#include <algorithm>

#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab07_cases.h"
#include "lab07_schedules.h"
#include "pipeline.h"

namespace lab07 {
namespace {

// The most micro-batches stage `actions` holds at once: forwards done minus backwards done.
int64_t peak_in_flight(const StageSchedule& actions) {
  int64_t now = 0, peak = 0;
  for (const Action& a : actions) {
    now += a.op == Op::Forward ? 1 : -1;
    peak = std::max(peak, now);
  }
  return peak;
}

// Forwards before the stage's first backward.
int64_t forwards_before_first_backward(const StageSchedule& actions) {
  int64_t n = 0;
  for (const Action& a : actions) {
    if (a.op == Op::Backward) break;
    ++n;
  }
  return n;
}

TEST(GpipeSchedule, AllForwardsThenAllBackwardsOnEveryStage) {
  const Schedule s = gpipe_schedule(3, 4);
  gtl::judge::Outputs recorded("GpipeSchedule.AllForwardsThenAllBackwardsOnEveryStage");
  lab07_cases::record_schedule(recorded, s);
  ASSERT_EQ(s.size(), 3u) << "one list of actions per stage";
  for (std::size_t st = 0; st < s.size(); ++st) {
    EXPECT_EQ(to_string(s[st]), "F0 F1 F2 F3 B0 B1 B2 B3") << "GPipe, p = 3, m = 4, stage " << st;
  }
}

TEST(GpipeSchedule, IsValidAndHoldsAllMicroBatchesForEveryShape) {
  gtl::judge::Outputs recorded("GpipeSchedule.IsValidAndHoldsAllMicroBatchesForEveryShape");
  for (int p = 1; p <= 4; ++p) {
    for (int64_t m = 1; m <= 8; ++m) {
      const Schedule s = gpipe_schedule(p, m);
      lab07_cases::record_schedule(recorded, s);
      ASSERT_EQ(s.size(), static_cast<std::size_t>(p)) << "p = " << p << ", m = " << m;
      EXPECT_EQ(schedule_problem(s, m), "") << "GPipe p = " << p << ", m = " << m;
      EXPECT_EQ(s, testing::gpipe_table(p, m))
          << "GPipe p = " << p << ", m = " << m << ", stage 0: " << to_string(s[0]);
      for (int st = 0; st < p; ++st) {
        EXPECT_EQ(peak_in_flight(s[static_cast<std::size_t>(st)]), m)
            << "GPipe holds every micro-batch's activations at the turn: stage " << st;
      }
    }
  }
  recorded.record(lab07_cases::throws_error([] { gpipe_schedule(0, 4); }));
  recorded.record(lab07_cases::throws_error([] { gpipe_schedule(2, 0); }));
  EXPECT_THROW(gpipe_schedule(0, 4), gtl::Error);
  EXPECT_THROW(gpipe_schedule(2, 0), gtl::Error);
}

// Shapes drawn from the grading seed (p up to 8, m up to 16, m < p included).
TEST(GpipeSchedule, SeededShapes) {
  gtl::judge::Outputs recorded("GpipeSchedule.SeededShapes");
  for (const auto& [p, m] : lab07_cases::seeded_schedule_shapes("GpipeSchedule.SeededShapes")) {
    const Schedule s = gpipe_schedule(p, m);
    lab07_cases::record_schedule(recorded, s);
    ASSERT_EQ(s.size(), static_cast<std::size_t>(p))
        << "p = " << p << ", m = " << m << ", " << gtl::test_seed::describe();
    EXPECT_EQ(schedule_problem(s, m), "")
        << "GPipe p = " << p << ", m = " << m << ", " << gtl::test_seed::describe();
    EXPECT_EQ(s, testing::gpipe_table(p, m))
        << "GPipe p = " << p << ", m = " << m << ", stage 0: " << to_string(s[0]) << ", "
        << gtl::test_seed::describe();
  }
}

TEST(OneFOneBSchedule, MatchesTheHandoutsTables) {
  gtl::judge::Outputs recorded("OneFOneBSchedule.MatchesTheHandoutsTables");
  for (const auto& [p, m] : std::vector<std::pair<int, int64_t>>{
           {1, 4}, {2, 4}, {3, 5}, {4, 1}, {4, 2}, {4, 4}, {4, 8}}) {
    const Schedule got = one_f_one_b_schedule(p, m);
    lab07_cases::record_schedule(recorded, got);
    const Schedule expected = testing::one_f_one_b_table(p, m);
    ASSERT_EQ(got.size(), expected.size()) << "1F1B p = " << p << ", m = " << m;
    for (std::size_t s = 0; s < got.size(); ++s) {
      EXPECT_EQ(to_string(got[s]), to_string(expected[s]))
          << "1F1B p = " << p << ", m = " << m << ", stage " << s << ": expected "
          << forwards_before_first_backward(expected[s])
          << " forwards before the first backward, got " << forwards_before_first_backward(got[s])
          << " (revisit the warm-up: how many micro-batches stage s may hold in flight, and what "
             "happens when m is smaller than that; then forward/backward pairs, then the "
             "cool-down)";
    }
  }
}

// The letters of a stage's actions ("FFBFB...").
std::string ops(const StageSchedule& actions) {
  std::string letters;
  for (const Action& a : actions) letters += a.op == Op::Forward ? 'F' : 'B';
  return letters;
}

// The micro-batches of one kind of action, in the stage's order.
std::vector<int64_t> micro_batches_of(const StageSchedule& actions, Op op) {
  std::vector<int64_t> out;
  for (const Action& a : actions)
    if (a.op == op) out.push_back(a.micro_batch);
  return out;
}

// One stage of a 1F1B schedule against the header's properties, not against a formula: three
// phases (some forwards, then forward/backward pairs, then the backwards left), forwards and
// backwards each in micro-batch order, at most min(p - s, m) micro-batches in flight, and the
// longest warm-up that bound allows (a warm-up one forward longer would exceed it, so the peak
// reaches the bound). Together these leave one order per stage.
void expect_one_f_one_b_stage(const StageSchedule& a, int p, int st, int64_t m,
                              const std::string& where) {
  std::vector<int64_t> in_order(static_cast<std::size_t>(m));
  for (int64_t i = 0; i < m; ++i) in_order[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(micro_batches_of(a, Op::Forward), in_order) << where << ": forwards 0 .. m-1";
  EXPECT_EQ(micro_batches_of(a, Op::Backward), in_order) << where << ": backwards 0 .. m-1";
  // The stage's own warm-up, read from its order: the forwards before the pair that holds its
  // first backward (all m when it runs no pair).
  const int64_t first = forwards_before_first_backward(a);
  const int64_t warmup = first >= m ? m : first - 1;
  std::string phases(static_cast<std::size_t>(std::max<int64_t>(warmup, 0)), 'F');
  for (int64_t k = 0; k < m - warmup; ++k) phases += "FB";
  phases += std::string(static_cast<std::size_t>(std::max<int64_t>(warmup, 0)), 'B');
  EXPECT_EQ(ops(a), phases) << where << ": expected three phases (warm-up forwards, then "
                            << "forward/backward pairs, then the backwards left), got " << ops(a);
  const int64_t bound = std::min<int64_t>(p - st, m), peak = peak_in_flight(a);
  EXPECT_EQ(peak, bound) << where << ": expected the longest warm-up that holds at most "
                         << "min(p - s, m) = " << bound << " micro-batches at once, so a peak of "
                         << bound << "; got a peak of " << peak << " after " << warmup
                         << " warm-up forwards (revisit the warm-up: count what the stage holds "
                         << "just after its first steady forward)";
}

TEST(OneFOneBSchedule, WarmUpIsTheLongestTheInFlightBoundAllows) {
  gtl::judge::Outputs recorded("OneFOneBSchedule.WarmUpIsTheLongestTheInFlightBoundAllows");
  for (int p = 1; p <= 4; ++p) {
    for (int64_t m = 1; m <= 8; ++m) {
      const Schedule s = one_f_one_b_schedule(p, m);
      lab07_cases::record_schedule(recorded, s);
      ASSERT_EQ(s.size(), static_cast<std::size_t>(p)) << "p = " << p << ", m = " << m;
      EXPECT_EQ(schedule_problem(s, m), "") << "1F1B p = " << p << ", m = " << m;
      for (int st = 0; st < p; ++st) {
        const StageSchedule& a = s[static_cast<std::size_t>(st)];
        expect_one_f_one_b_stage(a, p, st, m,
                                 "1F1B p = " + std::to_string(p) + ", m = " + std::to_string(m) +
                                     ", stage " + std::to_string(st) + " (" + to_string(a) + ")");
      }
    }
  }
  recorded.record(lab07_cases::throws_error([] { one_f_one_b_schedule(0, 4); }));
  recorded.record(lab07_cases::throws_error([] { one_f_one_b_schedule(2, 0); }));
  EXPECT_THROW(one_f_one_b_schedule(0, 4), gtl::Error);
  EXPECT_THROW(one_f_one_b_schedule(2, 0), gtl::Error);
}

// Shapes drawn from the grading seed (p up to 8, m up to 16): the same properties, valid.
TEST(OneFOneBSchedule, SeededShapes) {
  gtl::judge::Outputs recorded("OneFOneBSchedule.SeededShapes");
  for (const auto& [p, m] : lab07_cases::seeded_schedule_shapes("OneFOneBSchedule.SeededShapes")) {
    const Schedule s = one_f_one_b_schedule(p, m);
    lab07_cases::record_schedule(recorded, s);
    ASSERT_EQ(s.size(), static_cast<std::size_t>(p))
        << "p = " << p << ", m = " << m << ", " << gtl::test_seed::describe();
    EXPECT_EQ(schedule_problem(s, m), "")
        << "1F1B p = " << p << ", m = " << m << ", " << gtl::test_seed::describe();
    for (int st = 0; st < p; ++st) {
      const StageSchedule& a = s[static_cast<std::size_t>(st)];
      expect_one_f_one_b_stage(a, p, st, m,
                               "1F1B p = " + std::to_string(p) + ", m = " + std::to_string(m) +
                                   ", stage " + std::to_string(st) + " (" + to_string(a) + "), " +
                                   gtl::test_seed::describe());
    }
  }
}

// The validity check itself (provided), on schedules that break each rule.
TEST(ScheduleProblem, NamesWhatIsWrong) {
  EXPECT_EQ(schedule_problem(testing::parse({"F0 F1 B0 B1", "F0 B0 F1 B1"}), 2), "");
  EXPECT_NE(schedule_problem(testing::parse({"F0 B0", "F0 B0 B0"}), 1), "") << "backward twice";
  EXPECT_NE(schedule_problem(testing::parse({"F0 F1 B0 B1", "F0 B0"}), 2), "") << "F1 missing";
  EXPECT_NE(schedule_problem(testing::parse({"B0 F0", "F0 B0"}), 1), "")
      << "backward before its own forward";
  EXPECT_NE(schedule_problem(testing::parse({"F0 B0 F1 B1", "F0 F1 B0 B1"}), 2), "")
      << "a cycle: stage 0 waits for B0 from stage 1, which first waits for F1 from stage 0";
}

}  // namespace
}  // namespace lab07
