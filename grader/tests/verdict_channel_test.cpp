// The verdict channel's records: only keyed, well-formed records count, and anything else marks
// the run as forged; the plan, the outcomes, the seed and a test left running are read back.
#include <gtest/gtest.h>

#include "verdict_channel.h"

namespace gtl::grader {
namespace {

const std::string kKey = "0123456789abcdef";

std::string record(const std::string& text) {
  return kKey + " " + text + "\n";
}

TEST(VerdictChannel, ReadsACompleteRun) {
  const Verdicts v = parse_verdicts(
      record(std::string("hello ") + kVerdictMarker) + record("seed 77") + record("plan S.A") +
          record("plan S.B") + record("run S.A") + record("passed S.A") + record("run S.B") +
          record("skipped S.B") + record("end"),
      kKey);
  EXPECT_FALSE(v.forged) << v.forged_line;
  EXPECT_TRUE(v.hello);
  EXPECT_TRUE(v.ended);
  EXPECT_EQ(v.seed, "77");
  EXPECT_EQ(v.plan, (std::vector<std::string>{"S.A", "S.B"}));
  EXPECT_EQ(v.outcomes.at("S.A"), "passed");
  EXPECT_EQ(v.outcomes.at("S.B"), "skipped");
  EXPECT_EQ(v.running, "");
}

TEST(VerdictChannel, ATestThatNeverEndedIsLeftRunning) {
  const Verdicts v =
      parse_verdicts(record(std::string("hello ") + kVerdictMarker) + record("run S.A"), kKey);
  EXPECT_EQ(v.running, "S.A") << "the runner blames the test that was running when it died";
  EXPECT_FALSE(v.ended);
  EXPECT_TRUE(v.outcomes.empty());
}

TEST(VerdictChannel, RecordsWithoutTheKeyAreForgery) {
  const Verdicts v =
      parse_verdicts(record("run S.A") + "deadbeef passed S.A\n" + record("failed S.A"), kKey);
  EXPECT_TRUE(v.forged) << "a record with another key was written by someone else";
  EXPECT_EQ(v.forged_line, "deadbeef passed S.A");
}

TEST(VerdictChannel, MalformedOrImpossibleRecordsAreForgery) {
  EXPECT_TRUE(parse_verdicts(record("passed S.A"), kKey).forged)
      << "an outcome for a test that never started";
  EXPECT_TRUE(
      parse_verdicts(record("run S.A") + record("passed S.A") + record("passed S.A"), kKey).forged)
      << "two outcomes for one test";
  EXPECT_TRUE(parse_verdicts(record("victory"), kKey).forged) << "an unknown event";
  EXPECT_TRUE(parse_verdicts(record("hello not-the-marker"), kKey).forged);
  EXPECT_TRUE(parse_verdicts(kKey + " run S.A", kKey).forged) << "a record cut short";
  EXPECT_TRUE(parse_verdicts(record("end"), "").forged) << "no key: nothing can be trusted";
}

}  // namespace
}  // namespace gtl::grader
