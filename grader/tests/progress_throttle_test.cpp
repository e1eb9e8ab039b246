// Progress on every wait: a build's own progress lines reach the grader's progress callback,
// rate-limited, with the step's elapsed time; compiler output does not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "build.h"

namespace gtl::grader {
namespace {

struct Recorder {
  double now = 100;  // seconds on a fake clock
  std::vector<std::string> shown;
  ProgressThrottle throttle(const std::string& what, double interval_s) {
    return ProgressThrottle(
        what, [this](const std::string& l) { shown.push_back(l); }, interval_s,
        [this] { return now; });
  }
};

TEST(ElapsedText, SecondsMinutesHours) {
  EXPECT_EQ(elapsed_text(0.4), "0s");
  EXPECT_EQ(elapsed_text(42.9), "42s");
  EXPECT_EQ(elapsed_text(65), "1m05s");
  EXPECT_EQ(elapsed_text(3720), "1h02m");
  EXPECT_EQ(elapsed_text(-1), "0s") << "a clock that went back shows 0s, not a negative time";
}

TEST(ProgressThrottle, NinjaLinesAtMostOneEveryInterval) {
  Recorder rec;
  ProgressThrottle t = rec.throttle("building lab01_cpu_test", 5);
  rec.now = 101;
  t.line("[1/97] Building CXX object common/CMakeFiles/gtl_core.dir/tensor.cpp.o");
  EXPECT_TRUE(rec.shown.empty()) << "a line within the first interval is held back";
  rec.now = 106;
  t.line("[12/97] Building CXX object common/CMakeFiles/gtl_core.dir/ops.cpp.o");
  rec.now = 108;
  t.line("[13/97] Building CXX object common/CMakeFiles/gtl_core.dir/nn.cpp.o");
  rec.now = 165;
  t.line("[90/97] Linking CXX static library common/libgtl_core.a");
  t.finish();
  const std::vector<std::string> want = {
      "building lab01_cpu_test: [12/97] Building CXX object common/CMakeFiles/gtl_core.dir/"
      "ops.cpp.o (6s)",
      "building lab01_cpu_test: [90/97] Linking CXX static library common/libgtl_core.a (1m05s)",
      "building lab01_cpu_test: done (1m05s)"};
  EXPECT_EQ(rec.shown, want) << "one line per interval, each with the step's elapsed time, and "
                                "the end of the step always";
}

TEST(ProgressThrottle, OnlyProgressLinesPass) {
  Recorder rec;
  ProgressThrottle t = rec.throttle("configuring", 0);
  t.line("/w/impl/01-gpu-basics/saxpy.cpp:3:1: error: expected ';'");
  t.line("[link] not ninja's counter");
  t.line("");
  t.line("-- Found OpenMP: TRUE");
  ASSERT_EQ(rec.shown.size(), 1u) << "compiler output and other lines stay in the log";
  EXPECT_EQ(rec.shown[0], "configuring: -- Found OpenMP: TRUE (0s)");
}

TEST(ProgressThrottle, LongLinesAreCut) {
  Recorder rec;
  ProgressThrottle t = rec.throttle("b", 0);
  t.line("[1/2] " + std::string(300, 'x'));
  ASSERT_EQ(rec.shown.size(), 1u);
  EXPECT_EQ(rec.shown[0].size(), std::string("b: ").size() + 100 + std::string(" (0s)").size())
      << rec.shown[0];
}

}  // namespace
}  // namespace gtl::grader
