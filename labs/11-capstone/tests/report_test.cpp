// TODO 4: the report. The table of seeded plans (built by the brute force of lab11_cases.h, so
// that these checks need no other TODO) and the SVG of seeded breakdowns, line by line against
// the lines capstone.h specifies; the judge recomputes the lines from what the tests drew.
#include <gtest/gtest.h>

#include <sstream>

#include "capstone.h"
#include "gtl/runtime/error.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab11_cases.h"

namespace lab11 {
namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

void record(gtl::judge::Outputs& out, const std::vector<std::string>& lines) {
  out.record(lines.size());
  for (const std::string& l : lines) out.record(l);
}

void expect_lines(const std::vector<std::string>& got, const std::vector<std::string>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size())
      << what << ": " << got.size() << " lines, expected " << want.size() << " (capstone.h)";
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << what << ": line " << i + 1;
}

TEST(Report, TableListsTheBestThatFitBestFirst) {
  const std::string test = "Report.TableListsTheBestThatFitBestFirst";
  gtl::judge::Outputs out(test);
  std::mt19937_64 g = gtl::test_seed::generator(test + " rows");
  for (const auto& s : lab11_cases::seeded_search_cases(test, 80)) {
    const Plan plan = lab11_cases::brute_force_plan(s);
    const int rows = static_cast<int>(gtl::test_seed::draw(g, 1, 12));
    const std::string text = plan_table(plan, rows);
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "every line ends in a newline";
    const std::vector<std::string> got = lines_of(text);
    out.record(rows);
    record(out, got);
    expect_lines(got, lab11_cases::expected_table(plan, rows),
                 describe(s.model) + ", " + std::to_string(rows) + " rows (" +
                     gtl::test_seed::describe() +
                     "): the table (best first: the fastest, then "
                     "the smaller memory, then the earlier)");
  }
  EXPECT_THROW(plan_table(Plan{}, 0), gtl::Error);
}

TEST(Report, SvgStacksTheCategoriesToScaleUnderTheLimit) {
  const std::string test = "Report.SvgStacksTheCategoriesToScaleUnderTheLimit";
  gtl::judge::Outputs out(test);
  for (const auto& [m, gpu] : lab11_cases::seeded_breakdowns(test, 30)) {
    const std::vector<std::string> got = lines_of(memory_svg(m, gpu));
    record(out, got);
    expect_lines(got, lab11_cases::expected_svg(m, gpu),
                 "categories " + std::to_string(m.parameters) + ", " + std::to_string(m.gradients) +
                     ", " + std::to_string(m.optimizer) + ", " + std::to_string(m.activations) +
                     ", " + std::to_string(m.other) + " of " + std::to_string(gpu) + " bytes (" +
                     gtl::test_seed::describe() + ")");
  }
  MemoryBreakdown bad;
  bad.other = -1;
  EXPECT_THROW(memory_svg(bad, 10), gtl::Error);
  EXPECT_THROW(memory_svg(MemoryBreakdown{}, 0), gtl::Error);
}

}  // namespace
}  // namespace lab11
