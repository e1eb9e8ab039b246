// TODO 4: the report.
//   Report.TableListsTheParetoFrontFastestFirst   seeded plans (lab11_cases.h: drawn candidates,
//       so that these checks need no other TODO) and row counts: the header lines; each row one
//       fitting candidate of the plan written as capstone.h specifies; no listed candidate
//       dominated by a fitting candidate of the plan; fastest first, equals in the plan's order;
//       at most `rows` rows; "No configuration fits." for an infeasible plan.
//   Report.SvgStacksTheCategoriesToScaleUnderTheLimit   seeded breakdowns: the lines, categories
//       and colours in order, each height and y to scale within the printed 0.005.
// Every line is recorded: the judge compares each table with its own Pareto front (none
// missing) and each SVG with its own lines, exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// Row `row` of the table for candidate `c`, as capstone.h specifies the row (the contract).
std::string row_line(std::size_t row, const Candidate& c) {
  char line[512];
  std::snprintf(line, sizeof line, "| %zu | %s | %.2f | %.0f |", row, describe(c.config).c_str(),
                static_cast<double>(c.memory_bytes) / (1024.0 * 1024.0 * 1024.0), c.tokens_per_s);
  return line;
}

// b dominates a: at least as fast with no more memory, strictly better in one.
bool dominates(const Candidate& b, const Candidate& a) {
  return b.tokens_per_s >= a.tokens_per_s && b.memory_bytes <= a.memory_bytes &&
         (b.tokens_per_s > a.tokens_per_s || b.memory_bytes < a.memory_bytes);
}

TEST(Report, TableListsTheParetoFrontFastestFirst) {
  const std::string test = "Report.TableListsTheParetoFrontFastestFirst";
  gtl::judge::Outputs out(test);
  std::mt19937_64 g = gtl::test_seed::generator(test + " rows");
  int shortened = 0, dominated_left_out = 0;
  for (const Plan& plan : lab11_cases::seeded_plans(test, 80)) {
    const int rows = static_cast<int>(gtl::test_seed::draw(g, 1, 12));
    const std::string text = plan_table(plan, rows);
    EXPECT_TRUE(!text.empty() && text.back() == '\n') << "every line ends in a newline";
    const std::vector<std::string> got = lines_of(text);
    out.record(rows);
    record(out, got);
    const std::string at = std::to_string(plan.candidates.size()) + " candidates, " +
                           std::to_string(rows) + " rows (" + gtl::test_seed::describe() + ")";
    if (!plan.feasible) {
      ASSERT_EQ(got, std::vector<std::string>{"No configuration fits."})
          << at << ": nothing fits: the one line of capstone.h";
      continue;
    }
    ASSERT_GE(got.size(), 3u) << at << ": a feasible plan's table has its header and a row";
    EXPECT_EQ(got[0], "| # | configuration | memory (GiB) | tokens/s |") << at << ": line 1";
    EXPECT_EQ(got[1], "|---|---|---|---|") << at << ": line 2";
    ASSERT_LE(got.size() - 2, static_cast<std::size_t>(rows)) << at << ": at most `rows` rows";
    std::size_t previous = 0;
    for (std::size_t r = 1; r + 2 <= got.size(); ++r) {
      std::size_t j = 0;
      while (j < plan.candidates.size() && row_line(r, plan.candidates[j]) != got[r + 1]) ++j;
      ASSERT_LT(j, plan.candidates.size())
          << at << ": row " << r << ", \"" << got[r + 1] << "\", is no candidate of the plan "
          << "written as capstone.h specifies";
      const Candidate& c = plan.candidates[j];
      ASSERT_TRUE(c.fits) << at << ": row " << r << " does not fit";
      for (const Candidate& o : plan.candidates) {
        ASSERT_FALSE(o.fits && dominates(o, c))
            << at << ": row " << r << ", " << describe(c.config) << " (" << c.tokens_per_s
            << " tokens/s, " << c.memory_bytes << " B), is dominated by " << describe(o.config)
            << " (" << o.tokens_per_s << " tokens/s, " << o.memory_bytes
            << " B): the table lists the Pareto front of the fitting candidates";
      }
      if (r > 1) {
        const Candidate& p = plan.candidates[previous];
        ASSERT_TRUE(p.tokens_per_s > c.tokens_per_s ||
                    (p.tokens_per_s == c.tokens_per_s && previous < j))
            << at << ": row " << r - 1 << " (" << p.tokens_per_s << " tokens/s, candidate "
            << previous << ") before row " << r << " (" << c.tokens_per_s << " tokens/s, candidate "
            << j << "): fastest first, equals in the search's order";
      }
      previous = j;
    }
    // What the seeded plans must exercise: fronts cut by `rows`, and fitting candidates that
    // the front leaves out.
    int fitting = 0;
    for (const Candidate& c : plan.candidates) fitting += c.fits ? 1 : 0;
    shortened += got.size() - 2 == static_cast<std::size_t>(rows) ? 1 : 0;
    dominated_left_out += static_cast<int>(got.size()) - 2 < std::min(fitting, rows) ? 1 : 0;
  }
  EXPECT_GT(shortened, 0) << "no seeded plan whose table is cut at `rows`";
  EXPECT_GT(dominated_left_out, 0) << "no seeded plan with dominated fitting candidates left out";
  EXPECT_THROW(plan_table(Plan{}, 0), gtl::Error);
}

TEST(Report, SvgStacksTheCategoriesToScaleUnderTheLimit) {
  const std::string test = "Report.SvgStacksTheCategoriesToScaleUnderTheLimit";
  gtl::judge::Outputs out(test);
  const char* names[5] = {"parameters", "gradients", "optimizer", "activations", "other"};
  const char* fills[5] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f"};
  // "%.2f" rounds to the nearest 0.01: a printed figure is within 0.005 of the exact one (the
  // doubles' own error, ~1e-13 px at 400 px, is far below).
  constexpr double kPrinted = 0.005 + 1e-9;
  for (const auto& [m, gpu] : lab11_cases::seeded_breakdowns(test, 30)) {
    const std::vector<std::string> got = lines_of(memory_svg(m, gpu));
    record(out, got);
    const std::string at = "categories " + std::to_string(m.parameters) + ", " +
                           std::to_string(m.gradients) + ", " + std::to_string(m.optimizer) + ", " +
                           std::to_string(m.activations) + ", " + std::to_string(m.other) + " of " +
                           std::to_string(gpu) + " bytes (" + gtl::test_seed::describe() + ")";
    ASSERT_EQ(got.size(), 8u) << at << ": one element a line: svg, five rects, line, /svg";
    EXPECT_EQ(got[0], "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"440\">")
        << at;
    EXPECT_EQ(got[7], "</svg>") << at;
    const double top = static_cast<double>(std::max(m.total(), gpu));
    const int64_t bytes[5] = {m.parameters, m.gradients, m.optimizer, m.activations, m.other};
    double stack = 0;
    for (int i = 0; i < 5; ++i) {
      const std::string& line = got[static_cast<std::size_t>(i) + 1];
      double y = 0, h = 0;
      char rebuilt[256];
      const bool parsed =
          std::sscanf(line.c_str(),
                      "<rect data-category=\"%*[a-z]\" x=\"60\" y=\"%lf\" width=\"80\" "
                      "height=\"%lf\"",
                      &y, &h) == 2;
      std::snprintf(rebuilt, sizeof rebuilt,
                    "<rect data-category=\"%s\" x=\"60\" y=\"%.2f\" width=\"80\" height=\"%.2f\" "
                    "fill=\"%s\"/>",
                    names[i], y, h, fills[i]);
      ASSERT_TRUE(parsed && line == rebuilt)
          << at << ": rect " << i + 1 << " is \"" << line << "\": capstone.h's rect of " << names[i]
          << ", fill " << fills[i] << ", y and height \"%.2f\"";
      const double want_h = 400.0 * static_cast<double>(bytes[i]) / top;
      stack += want_h;
      EXPECT_LE(std::fabs(h - want_h), kPrinted)
          << at << ": the " << names[i] << " bar is " << h << " px, expected " << want_h
          << " (400 px for max(total, GPU memory))";
      EXPECT_LE(std::fabs(y - (420.0 - stack)), kPrinted)
          << at << ": the " << names[i] << " bar's top is at y = " << y << ", expected "
          << 420.0 - stack << " (stacked on the bars below it from the baseline y = 420)";
    }
    double y1 = 0, y2 = 0;
    char rebuilt[256];
    const bool parsed = std::sscanf(got[6].c_str(),
                                    "<line data-limit=\"gpu\" x1=\"40\" x2=\"160\" y1=\"%lf\" "
                                    "y2=\"%lf\"",
                                    &y1, &y2) == 2;
    std::snprintf(rebuilt, sizeof rebuilt,
                  "<line data-limit=\"gpu\" x1=\"40\" x2=\"160\" y1=\"%.2f\" y2=\"%.2f\" "
                  "stroke=\"black\"/>",
                  y1, y2);
    ASSERT_TRUE(parsed && got[6] == rebuilt && y1 == y2)
        << at << ": the limit line is \"" << got[6] << "\" (capstone.h's line)";
    const double want_y = 420.0 - 400.0 * static_cast<double>(gpu) / top;
    EXPECT_LE(std::fabs(y1 - want_y), kPrinted)
        << at << ": the GPU's line at y = " << y1 << ", expected " << want_y;
  }
  MemoryBreakdown bad;
  bad.other = -1;
  EXPECT_THROW(memory_svg(bad, 10), gtl::Error);
  EXPECT_THROW(memory_svg(MemoryBreakdown{}, 0), gtl::Error);
}

}  // namespace
}  // namespace lab11
