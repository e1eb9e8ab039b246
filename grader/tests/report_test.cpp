// Report writers: Gradescope fields, JUnit well-formedness and escaping, a self-contained HTML
// page, and files written whole.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "report.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

GradeResult sample() {
  GradeResult r;
  r.submission = "/subs/alice";
  LabResult lab;
  lab.lab = "01";
  lab.title = "Sums & <scans>";
  lab.open_todos = {"01-sum/sum.cpp:5: // TODO(lab01): add"};
  CheckResult pass;
  pass.name = "correct";
  pass.status = Status::kPassed;
  pass.score = pass.max_score = 4;
  pass.reason = "3/3 tests passed";
  CheckResult fail;
  fail.name = "speed \"fast\"";
  fail.kind = CheckKind::kSpeed;
  fail.status = Status::kPartial;
  fail.score = 1;
  fail.max_score = 2;
  fail.reason = "speedup 3x < 4x & more";
  fail.details = "output with control \x01 char and bad utf8 \xff <tag>";
  fail.figure = 3;
  fail.threshold = 4;
  fail.partial_from = 2;
  fail.figure_label = "speedup";
  CheckResult gpu;
  gpu.name = "gpu";
  gpu.requires_gpu = true;
  gpu.status = Status::kSkipped;
  gpu.max_score = 3;
  gpu.reason = "requires a GPU and this machine has none";
  CheckResult hidden = pass;
  hidden.name = "hidden";
  hidden.hidden = true;
  lab.checks = {pass, fail, gpu, hidden};
  r.labs = {lab};
  return r;
}

// A minimal well-formedness check: every tag closes in order, no raw '<' or '&' in text, and
// every attribute value is quoted.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  std::size_t i = 0;
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      const auto semi = xml.find(';', i);
      const std::string ent = xml.substr(i, semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;")
        return "bad entity at " + std::to_string(i);
      i = semi + 1;
    } else if (xml[i] == '<') {
      const auto end = xml.find('>', i);
      if (end == std::string::npos) return "unclosed tag";
      std::string tag = xml.substr(i + 1, end - i - 1);
      if (tag.find('<') != std::string::npos) return "'<' inside a tag";
      const bool closing = tag[0] == '/', empty = tag.back() == '/';
      std::string name = tag.substr(closing, tag.find_first_of(" /", closing) - closing);
      std::size_t quotes = std::count(tag.begin(), tag.end(), '"');
      if (quotes % 2) return "unbalanced quotes in <" + tag + ">";
      if (closing) {
        if (open.empty() || open.back() != name) return "</" + name + "> closes the wrong tag";
        open.pop_back();
      } else if (!empty) {
        open.push_back(name);
      }
      i = end + 1;
    } else {
      if (static_cast<unsigned char>(xml[i]) < 0x20 && xml[i] != '\n' && xml[i] != '\t')
        return "control character in text";
      ++i;
    }
  }
  return open.empty() ? "" : "<" + open.back() + "> never closes";
}

TEST(Gradescope, HasEveryFieldAndCountsSkippedApart) {
  const nlohmann::json j = gradescope_json(sample());
  EXPECT_EQ(j["score"], 9.0) << "4 + 1 + 4: the skipped check is not graded";
  EXPECT_EQ(j["visibility"], "visible");
  EXPECT_EQ(j["stdout_visibility"], "hidden");
  ASSERT_TRUE(j["output"].is_string());
  EXPECT_NE(j["output"].get<std::string>().find("TODO(lab01)"), std::string::npos)
      << "open TODOs are in what the student reads";
  EXPECT_NE(j["output"].get<std::string>().find("3 points not graded"), std::string::npos);
  ASSERT_EQ(j["tests"].size(), 4u);
  for (const auto& t : j["tests"]) {
    for (const char* key : {"name", "score", "max_score", "output", "tags", "visibility"})
      EXPECT_TRUE(t.contains(key)) << key << " missing in " << t.dump();
  }
  EXPECT_EQ(j["tests"][0]["status"], "passed");
  EXPECT_EQ(j["tests"][1]["status"], "failed");
  EXPECT_EQ(j["tests"][1]["score"], 1.0);
  EXPECT_EQ(j["tests"][1]["max_score"], 2.0);
  EXPECT_EQ(j["tests"][2]["max_score"], 0) << "a skipped check: neither zero nor full marks";
  EXPECT_FALSE(j["tests"][2].contains("status"));
  EXPECT_NE(j["tests"][2]["output"].get<std::string>().find("SKIPPED"), std::string::npos);
  EXPECT_EQ(j["tests"][3]["visibility"], "after_published") << "hidden checks stay hidden";
}

TEST(JUnit, WellFormedAndEscaped) {
  const std::string xml = junit_xml(sample());
  EXPECT_EQ(xml_problem(xml), "");
  EXPECT_NE(xml.find("Sums &amp; &lt;scans&gt;"), std::string::npos);
  EXPECT_NE(xml.find("name=\"speed &quot;fast&quot;\""), std::string::npos);
  EXPECT_NE(xml.find("<skipped message="), std::string::npos);
  EXPECT_NE(xml.find("tests=\"4\" failures=\"1\" skipped=\"1\""), std::string::npos) << xml;
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  EXPECT_EQ(xml.find('\xff'), std::string::npos) << "invalid UTF-8 is replaced";
}

TEST(Html, SelfContainedWithSvgFigures) {
  const std::string html = html_report(sample());
  EXPECT_NE(html.find("<svg"), std::string::npos) << "speed figures are drawn";
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos) << "no external resources";
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("&lt;tag&gt;"), std::string::npos) << "program output is escaped";
}

TEST(Terminal, ColourOnlyWhenAsked) {
  const std::string plain = terminal_report(sample(), false);
  EXPECT_EQ(plain.find('\033'), std::string::npos);
  EXPECT_NE(plain.find("TOTAL: 9 / 10"), std::string::npos) << plain;
  EXPECT_NE(plain.find("-- / 3"), std::string::npos) << "skipped points are shown apart";
  EXPECT_NE(terminal_report(sample(), true).find('\033'), std::string::npos);
}

// A 0-point check (a stretch step): its pass/fail is shown, neutral, never as a red failure.
GradeResult with_stretch_and_next_step() {
  GradeResult r = sample();
  CheckResult stretch;
  stretch.name = "fused";
  stretch.status = Status::kFailed;
  stretch.max_score = 0;
  stretch.reason = "fuse the two kernels [Fused.Matches failed]";
  r.labs[0].checks.push_back(stretch);
  r.labs[0].next_step = "TODO 1a in reduce.cu, see labs/02-cuda-kernels/README.md#todo-1a";
  return r;
}

TEST(Terminal, NeverCutsACheckName) {
  GradeResult r = sample();
  CheckResult longest;
  longest.name = "checkpoint-units-consolidate-on-many-ranks";  // 42 characters
  longest.status = Status::kPassed;
  longest.score = longest.max_score = 4;
  longest.reason = "2/2 tests passed";
  r.labs[0].checks.push_back(longest);
  const std::string text = terminal_report(r, false);
  EXPECT_NE(text.find(longest.name + "  4 / 4"), std::string::npos)
      << "the whole name, then the points after two spaces at least:\n"
      << text;
}

TEST(Stretch, TerminalSaysNotGradedInNoRed) {
  const std::string text = terminal_report(with_stretch_and_next_step(), true);
  const auto row = text.find("  fused ");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row, text.find('\n', row) - row);
  EXPECT_NE(line.find("stretch, not graded: fuse the two kernels"), std::string::npos)
      << "a 0-point check says it is not graded: " << line;
  EXPECT_NE(line.find("failed"), std::string::npos) << "its pass/fail is still shown: " << line;
  EXPECT_EQ(line.find("\033[31m"), std::string::npos)
      << "a stretch step costs nothing: it is not painted as a red failure: " << line;
}

TEST(Stretch, HtmlBadgeIsNeutral) {
  const std::string html = html_report(with_stretch_and_next_step());
  EXPECT_NE(html.find("<span class='badge stretch'>stretch: failed</span>"), std::string::npos)
      << "the stretch step's badge must use the neutral 'stretch' class";
  EXPECT_NE(html.find("stretch, not graded"), std::string::npos);
  EXPECT_EQ(report_json(with_stretch_and_next_step())["labs"][0]["checks"][4]["stretch"], true);
}

TEST(NextStep, TerminalAndHtmlEndWithIt) {
  const GradeResult r = with_stretch_and_next_step();
  const std::string want = "next: TODO 1a in reduce.cu, see labs/02-cuda-kernels/README.md#todo-1a";
  const std::string text = terminal_report(r, false);
  ASSERT_GE(text.size(), want.size() + 1);
  EXPECT_EQ(text.substr(text.size() - want.size() - 1), want + "\n")
      << "the terminal report must end with the next step:\n"
      << text;
  const std::string html = html_report(r);
  EXPECT_NE(html.find("<div class='next'>" + want + "</div></main>"), std::string::npos)
      << "the HTML report must end with the next step";
  const std::string summary = gradescope_json(r)["output"];
  EXPECT_EQ(summary.substr(summary.size() - want.size() - 1), want + "\n")
      << "Gradescope's summary must end with the next step too:\n"
      << summary;
  EXPECT_EQ(terminal_report(sample(), false).find("next:"), std::string::npos)
      << "no next step, no line";
}

TEST(GroupRepeatedFailures, SameMessageOnceWithCount) {
  std::string details = "note: a warning\n";
  for (int i = 0; i < 40; ++i)
    details += "--- Sizes/Reduce.Matches/" + std::to_string(i) +
               " (failed)\nr.cu:9\nExpected equality of these values:\n  1\n  2\nTODO 1a\n";
  details += "--- Other.Test (crashed)\nsegfault\n";
  EXPECT_EQ(group_repeated_failures(details),
            "note: a warning\n"
            "--- Sizes/Reduce.Matches/0, Sizes/Reduce.Matches/1, Sizes/Reduce.Matches/2 and 37 "
            "more (failed) x 40\n"
            "r.cu:9\nExpected equality of these values:\n  1\n  2\nTODO 1a\n"
            "--- Other.Test (crashed)\nsegfault\n")
      << "40 tests with one message are shown once, with their count; others stay as they are";
}

TEST(GroupRepeatedFailures, RepeatedFailureInsideOneTest) {
  const std::string one = "r.cu:9\nExpected: (err) < (tol), actual: 1 vs 0.1\nrow sum\n";
  EXPECT_EQ(group_repeated_failures("--- T.A (failed)\n" + one + one + one + "r.cu:12\nFailed\n"),
            "--- T.A (failed)\n" + one + "(x 3)\nr.cu:12\nFailed\n")
      << "an assertion failing in a loop is shown once with its count";
}

TEST(WriteReports, WritesEveryFileWhole) {
  const fs::path dir = fs::temp_directory_path() /
                       ("gtl-grade-report-test-" +
                        std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(dir);
  write_reports(sample(), dir);
  for (const char* f : {"results.json", "report.json", "junit.xml", "report.html"})
    EXPECT_TRUE(fs::is_regular_file(dir / f)) << f;
  std::ifstream in(dir / "results.json");
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(nlohmann::json::parse(s.str(), nullptr, false).is_discarded());
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "no temporary file left";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gtl::grader
