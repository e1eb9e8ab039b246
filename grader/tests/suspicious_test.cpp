// The instructor's view of suspicious student code: the fixture submissions that start
// processes, read their command line or include outside their folder are listed with the line
// and why; a plain solution is not.
#include <gtest/gtest.h>

#include <filesystem>

#include "modes.h"
#include "suspicious.h"

namespace gtl::grader {
namespace {

const std::filesystem::path kSubmissions =
    std::filesystem::path(GTL_GRADER_FIXTURES) / "submissions";

Rubric sum_lab() {
  Rubric r;
  r.lab = "01";
  r.dir = "01-sum";
  r.student_files = {"sum.cpp"};
  return r;
}

bool has(const std::vector<SuspiciousLine>& lines, const std::string& category,
         const std::string& text) {
  for (const auto& l : lines)
    if (l.category == category && l.text.find(text) != std::string::npos) return true;
  return false;
}

TEST(Suspicious, ProcessesCommandLineAndIncludesAreListed) {
  const auto daemon = suspicious_lines(kSubmissions / "daemon", sum_lab());
  EXPECT_TRUE(has(daemon, "process", "setsid();")) << "a daemon starts with setsid()";
  const auto listing = suspicious_lines(kSubmissions / "forge_listing", sum_lab());
  EXPECT_TRUE(has(listing, "file", "/proc/self/cmdline"));
  const auto harness = suspicious_lines(kSubmissions / "harness_detect", sum_lab());
  EXPECT_TRUE(has(harness, "test harness", "--gtest")) << "code that looks for GoogleTest";
  const auto solution = suspicious_lines(kSubmissions / "include_solution", sum_lab());
  EXPECT_TRUE(has(solution, "include", "../../solution/01-sum/sum.cpp"));
  for (const auto& l : daemon) EXPECT_EQ(l.where.rfind("01-sum/sum.cpp:", 0), 0u) << l.where;
}

TEST(Suspicious, ASolutionWithoutSuchCodeIsNotListed) {
  EXPECT_TRUE(suspicious_lines(kSubmissions / "correct", sum_lab()).empty());
  EXPECT_TRUE(suspicious_lines(kSubmissions / "failing", sum_lab()).empty());
}

TEST(Suspicious, TheBatchReportNamesSubmissionsWithLinesToLookAt) {
  const std::string report = suspicious_report(kSubmissions, {sum_lab()});
  EXPECT_NE(report.find("daemon ("), std::string::npos) << report;
  EXPECT_NE(report.find("tamper_course ("), std::string::npos) << report;
  EXPECT_EQ(report.find("\ncorrect ("), std::string::npos) << "nothing to look at in 'correct'";
}

}  // namespace
}  // namespace gtl::grader
