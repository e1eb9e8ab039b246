// TODO 4: 1F1B as data, for every p = 1..4 and m = 1..8 (m < p included), the handout's shapes and
// seeded shapes, held to the header's properties, not to a table: valid (schedule_problem: every
// dependency met, no cycle), three phases, forwards and backwards each in micro-batch order, at
// most min(p - s, m) micro-batches in flight and the longest warm-up that allows. Together these
// leave one order per stage; the judge compares it with its own.
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

// "" when a stage's letters are three phases: forwards only, then one forward and one backward in
// turn, then backwards only; else what breaks it. After the stage's first backward no two
// forwards follow each other, and no forward follows two backwards.
std::string phases_problem(const std::string& letters) {
  const std::size_t first_backward = letters.find('B');
  if (first_backward == std::string::npos) return "";
  const std::string rest = letters.substr(first_backward);
  if (const std::size_t at = rest.find("FF"); at != std::string::npos)
    return "two forwards in a row (the second is action " +
           std::to_string(first_backward + at + 1) + ", from 0) after the first backward";
  const std::size_t two_b = rest.find("BB");
  if (two_b != std::string::npos && rest.find('F', two_b) != std::string::npos)
    return "a forward (action " + std::to_string(first_backward + rest.find('F', two_b)) +
           ", from 0) after two backwards in a row (the cool-down runs backwards only)";
  return "";
}

// One stage of a 1F1B schedule against the header's properties, not against a formula: three
// phases, forwards and backwards each in micro-batch order, at most min(p - s, m) micro-batches
// in flight and the longest warm-up that bound allows (a warm-up one forward longer would exceed
// it, so the peak reaches the bound). Together these leave one order per stage.
void expect_one_f_one_b_stage(const StageSchedule& a, int p, int st, int64_t m,
                              const std::string& where) {
  std::vector<int64_t> in_order(static_cast<std::size_t>(m));
  for (int64_t i = 0; i < m; ++i) in_order[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(micro_batches_of(a, Op::Forward), in_order) << where << ": forwards 0 .. m-1";
  EXPECT_EQ(micro_batches_of(a, Op::Backward), in_order) << where << ": backwards 0 .. m-1";
  EXPECT_EQ(phases_problem(ops(a)), "")
      << where << ": expected three phases (warm-up forwards, then one forward and one backward "
      << "in turn, then the backwards left), got " << ops(a);
  const int64_t bound = std::min<int64_t>(p - st, m), peak = peak_in_flight(a);
  EXPECT_EQ(peak, bound) << where << ": expected the longest warm-up that holds at most "
                         << "min(p - s, m) = " << bound << " micro-batches at once, so a peak of "
                         << bound << "; got a peak of " << peak << " with "
                         << forwards_before_first_backward(a) << " forwards before the first "
                         << "backward (revisit the warm-up: the bound counts every micro-batch "
                         << "from its forward to its backward)";
}

// The handout's shapes (its picture is p = 4, m = 4) and an odd depth: the header's properties on
// every stage, and what 1F1B saves against the harness's GPipe, the same work in another order.
TEST(OneFOneBSchedule, HandoutShapesHoldTheHeadersPropertiesAndLessThanGpipe) {
  gtl::judge::Outputs recorded(
      "OneFOneBSchedule.HandoutShapesHoldTheHeadersPropertiesAndLessThanGpipe");
  for (const auto& [p, m] : lab07_cases::handout_schedule_shapes()) {
    const Schedule got = one_f_one_b_schedule(p, m);
    lab07_cases::record_schedule(recorded, got);
    const std::string shape = "1F1B p = " + std::to_string(p) + ", m = " + std::to_string(m);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(p)) << shape << ": one list per stage";
    EXPECT_EQ(schedule_problem(got, m), "")
        << shape << ": forward i on stage s after forward i on s-1, backward i after backward i "
        << "on s+1 and after its own forward, and no stage waiting around a cycle";
    const Schedule gpipe = gpipe_schedule(p, m);
    for (int st = 0; st < p; ++st) {
      const StageSchedule& a = got[static_cast<std::size_t>(st)];
      expect_one_f_one_b_stage(a, p, st, m,
                               shape + ", stage " + std::to_string(st) + " (" + to_string(a) + ")");
      EXPECT_LE(peak_in_flight(a), peak_in_flight(gpipe[static_cast<std::size_t>(st)]))
          << shape << ", stage " << st << ": 1F1B never holds more than GPipe's m";
    }
  }
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
