// Terminal, JSON, Gradescope and JUnit reports.
#include "report.h"
#include "files.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iomanip>
#include <regex>
#include <sstream>
#include <vector>

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

std::string lab_name(const LabResult& lab) {
  return "Lab " + lab.lab + " (" + lab.title + ")";
}

// The text a student reads first: totals, build errors, open TODOs, skipped points.
std::string summary_text(const GradeResult& r) {
  std::ostringstream s;
  if (!r.error.empty()) s << "GRADING PROBLEM: " << r.error << "\n\n";
  if (r.sandbox.rfind("none", 0) == 0)
    s << "WARNING: student code ran without a sandbox (" << r.sandbox << ")\n\n";
  s << "Score: " << pts(r.score()) << " / " << pts(r.max_score());
  if (r.skipped_points() > 0)
    s << " (+ " << pts(r.skipped_points())
      << " points not graded on this machine: counted apart, neither zero nor full marks)";
  s << "\n";
  if (!r.seed.empty())
    s << "Grading seed: " << r.seed << " (the tests' extra shapes and values; run a test program "
      << "with GTL_TEST_SEED=" << r.seed << " to repeat them)\n";
  for (const auto& lab : r.labs) {
    s << "\n" << lab_name(lab) << ": " << pts(lab.score()) << " / " << pts(lab.max_score()) << "\n";
    if (!lab.error.empty()) s << "  " << lab.error << "\n";
    if (!lab.compile_problem().empty())
      s << "  " << lab.compile_problem() << "; first compiler errors:\n" << lab.build_errors;
    if (!lab.open_todos.empty()) {
      s << "  Still marked TODO:\n";
      for (const auto& t : lab.open_todos) s << "    " << t << "\n";
    }
  }
  const std::string next = next_step_line(r);
  if (!next.empty()) s << "\n" << next << "\n";
  return s.str();
}

// Splits `text` before every line for which `starts` holds; text before the first such line is
// the first piece (possibly empty).
template <typename Pred>
std::vector<std::string> split_before(const std::string& text, Pred starts) {
  std::vector<std::string> pieces(1);
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (starts(l) && !pieces.back().empty()) pieces.emplace_back();
    pieces.back() += l + "\n";
  }
  return pieces;
}

// Identical pieces once each, in order of first appearance, with how many times each came.
std::vector<std::pair<std::string, int>> count_repeats(const std::vector<std::string>& pieces) {
  std::vector<std::pair<std::string, int>> out;
  for (const auto& p : pieces) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == p; });
    if (it == out.end())
      out.emplace_back(p, 1);
    else
      ++it->second;
  }
  return out;
}

// "path:42" (JSON report) or "path:42: Failure" (console): where a GoogleTest failure starts.
bool is_gtest_failure_header(const std::string& line) {
  static const std::regex header(R"(^(\S.*:\d+|unknown file)(: Failure)?$)");
  return std::regex_match(line, header);
}

// One test's message with a failure repeated inside it shown once, "(x N)" after it.
std::string group_message(const std::string& body) {
  std::string out;
  for (const auto& [piece, n] : count_repeats(split_before(body, is_gtest_failure_header)))
    out += piece + (n > 1 ? "(x " + std::to_string(n) + ")\n" : "");
  return out;
}

}  // namespace

std::string group_repeated_failures(const std::string& details) {
  auto is_test_header = [](const std::string& l) { return l.rfind("--- ", 0) == 0; };
  const std::vector<std::string> blocks = split_before(details, is_test_header);
  // Each test block: "--- <name> (<outcome>)" and its message; grouped by outcome and message.
  struct Group {
    std::string outcome, body;
    std::vector<std::string> names;
  };
  std::string out;
  std::vector<Group> groups;
  for (const auto& b : blocks) {
    if (!is_test_header(b)) {
      out += b;  // a note before the first test
      continue;
    }
    const auto nl = b.find('\n');
    const std::string head = b.substr(4, nl - 4), body = b.substr(nl + 1);
    const auto paren = head.find(" (");
    const std::string name = head.substr(0, paren);
    const std::string outcome = paren == std::string::npos ? "" : head.substr(paren);
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const Group& g) { return g.outcome == outcome && g.body == body; });
    if (it == groups.end())
      groups.push_back({outcome, body, {name}});
    else
      it->names.push_back(name);
  }
  for (const auto& g : groups) {
    std::string names;
    for (std::size_t i = 0; i < g.names.size() && i < 3; ++i) names += (i ? ", " : "") + g.names[i];
    if (g.names.size() > 3) names += " and " + std::to_string(g.names.size() - 3) + " more";
    out += "--- " + names + g.outcome +
           (g.names.size() > 1 ? " x " + std::to_string(g.names.size()) : "") + "\n" +
           group_message(g.body);
  }
  return out;
}

std::string next_step_line(const GradeResult& r) {
  for (const auto& lab : r.labs)
    if (!lab.next_step.empty()) return "next: " + lab.next_step;
  return "";
}

std::string valid_utf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    const int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = len > 0 && i + len <= text.size();
    for (int k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(text[i + k]) >> 6) == 2;
    if (ok) {
      out.append(text, i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char ch : valid_utf8(text)) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (c >= 0x20 || ch == '\n' || ch == '\t' || ch == '\r') out += ch;
    }
  }
  return out;
}

std::string terminal_report(const GradeResult& r, bool colour) {
  auto paint = [&](Status s, const std::string& text) {
    if (!colour) return text;
    const char* code = s == Status::kPassed    ? "\033[32m"
                       : s == Status::kPartial ? "\033[33m"
                       : s == Status::kSkipped ? "\033[36m"
                                               : "\033[31m";
    return code + text + "\033[0m";
  };
  std::ostringstream s;
  for (const auto& lab : r.labs) {
    // The check column fits the lab's longest name (at least 28 wide), never cutting one.
    std::size_t width = 28;
    for (const auto& c : lab.checks)
      width = std::max(width, c.name.size() + (c.hidden ? 9 : 0) + 2);
    s << "\n" << lab_name(lab) << "\n";
    s << "  " << std::left << std::setw(int(width)) << "check" << std::setw(13) << "points"
      << std::setw(9) << "status"
      << "reason\n";
    for (const auto& c : lab.checks) {
      std::string name = c.name + (c.hidden ? " (hidden)" : "");
      std::string points = c.status == Status::kSkipped ? "-- / " + pts(c.max_score)
                           : c.stretch()                ? "stretch"
                                                        : pts(c.score) + " / " + pts(c.max_score);
      std::string reason = c.reason.substr(0, c.reason.find('\n'));
      if (c.stretch()) reason = "stretch, not graded: " + reason;
      if (reason.size() > 110) reason = reason.substr(0, 107) + "...";
      std::string status = to_string(c.status);
      status.resize(9, ' ');
      s << "  " << std::setw(int(width)) << name << std::setw(13) << points
        << (c.stretch() ? status : paint(c.status, status)) << reason << "\n";
    }
    if (!lab.compile_problem().empty()) {
      s << "  " << lab.compile_problem() << "; first compiler errors:\n";
      std::istringstream e(lab.build_errors);
      for (std::string l; std::getline(e, l);) s << "    " << l << "\n";
    }
    if (!lab.open_todos.empty()) {
      s << "  Still marked TODO(lab" << lab.lab << "):\n";
      for (const auto& t : lab.open_todos) s << "    " << t << "\n";
    }
    s << "  lab total: " << pts(lab.score()) << " / " << pts(lab.max_score());
    if (lab.skipped_points() > 0) s << "  (" << pts(lab.skipped_points()) << " not graded here)";
    s << "\n";
  }
  s << "\nTOTAL: " << pts(r.score()) << " / " << pts(r.max_score());
  if (r.skipped_points() > 0)
    s << "  (+ " << pts(r.skipped_points())
      << " points of checks that need a GPU or CUDA: not graded here)";
  s << "\n";
  if (!r.error.empty()) s << "\nGRADING PROBLEM: " << r.error << "\n";
  const std::string next = next_step_line(r);
  if (!next.empty()) s << "\n" << (colour ? "\033[1m" + next + "\033[0m" : next) << "\n";
  return s.str();
}

nlohmann::json report_json(const GradeResult& r) {
  nlohmann::json j;
  j["submission"] = r.submission;
  j["score"] = r.score();
  j["max_score"] = r.max_score();
  j["skipped_points"] = r.skipped_points();
  j["error"] = r.error;
  j["exit_code"] = r.exit_code;
  j["sandbox"] = r.sandbox;
  j["seed"] = r.seed;
  j["labs"] = nlohmann::json::array();
  for (const auto& lab : r.labs) {
    nlohmann::json l = {{"lab", lab.lab},
                        {"title", lab.title},
                        {"dir", lab.dir},
                        {"built", lab.built},
                        {"failed_targets", lab.failed_targets},
                        {"build_errors", lab.build_errors},
                        {"error", lab.error},
                        {"open_todos", lab.open_todos},
                        {"next_step", lab.next_step},
                        {"score", lab.score()},
                        {"max_score", lab.max_score()},
                        {"skipped_points", lab.skipped_points()},
                        {"checks", nlohmann::json::array()}};
    for (const auto& c : lab.checks) {
      nlohmann::json cj = {{"name", c.name},
                           {"kind", to_string(c.kind)},
                           {"status", to_string(c.status)},
                           {"score", c.score},
                           {"max_score", c.max_score},
                           {"hidden", c.hidden},
                           {"stretch", c.stretch()},
                           {"requires_gpu", c.requires_gpu},
                           {"requires_cuda", c.requires_cuda},
                           {"reason", c.reason},
                           {"details", c.details},
                           {"tests", nlohmann::json::array()}};
      if (c.figure) cj["figure"] = *c.figure;
      if (c.threshold) cj["threshold"] = *c.threshold;
      if (c.partial_from) cj["partial_from"] = *c.partial_from;
      if (!c.figure_label.empty()) cj["figure_label"] = c.figure_label;
      if (c.solution_figure) {
        cj["solution_figure"] = *c.solution_figure;
        cj["calibrated_on"] = c.calibrated_on;
      }
      for (const auto& t : c.tests)
        cj["tests"].push_back(
            {{"name", t.name}, {"outcome", to_string(t.outcome)}, {"message", t.message}});
      l["checks"].push_back(cj);
    }
    j["labs"].push_back(l);
  }
  return j;
}

nlohmann::json gradescope_json(const GradeResult& r) {
  nlohmann::json j;
  j["score"] = r.score();
  j["output"] = summary_text(r);
  j["visibility"] = "visible";
  j["stdout_visibility"] = "hidden";
  j["tests"] = nlohmann::json::array();
  for (const auto& lab : r.labs) {
    for (const auto& c : lab.checks) {
      nlohmann::json t;
      t["name"] = "Lab " + lab.lab + ": " + c.name;
      t["visibility"] = c.hidden ? "after_published" : "visible";
      t["tags"] = {"lab" + lab.lab, to_string(c.kind)};
      if (c.requires_gpu) t["tags"].push_back("gpu");
      if (c.requires_cuda) t["tags"].push_back("cuda");
      std::string output = c.reason;
      if (!c.details.empty()) output += "\n\n" + c.details;
      if (c.status == Status::kSkipped) {
        // Neither zero nor full marks: the points leave the total (max_score 0) and no status
        // is given, so Gradescope shows it as neither passed nor failed.
        t["score"] = 0;
        t["max_score"] = 0;
        t["tags"].push_back("skipped");
        output = "SKIPPED (" + pts(c.max_score) + " points not graded on this machine): " + output;
      } else {
        t["score"] = c.score;
        t["max_score"] = c.max_score;
        t["status"] = c.status == Status::kPassed ? "passed" : "failed";
      }
      t["output"] = output;
      j["tests"].push_back(t);
    }
  }
  return j;
}

std::string junit_xml(const GradeResult& r) {
  std::ostringstream s;
  int tests = 0, failures = 0, skipped = 0;
  for (const auto& lab : r.labs)
    for (const auto& c : lab.checks) {
      ++tests;
      failures += c.status == Status::kFailed || c.status == Status::kPartial;
      skipped += c.status == Status::kSkipped;
    }
  s << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s << "<testsuites name=\"gtl-grade\" tests=\"" << tests << "\" failures=\"" << failures
    << "\" skipped=\"" << skipped << "\">\n";
  for (const auto& lab : r.labs) {
    int lf = 0, ls = 0;
    for (const auto& c : lab.checks) {
      lf += c.status == Status::kFailed || c.status == Status::kPartial;
      ls += c.status == Status::kSkipped;
    }
    s << "  <testsuite name=\"" << xml_escape(lab_name(lab)) << "\" tests=\"" << lab.checks.size()
      << "\" failures=\"" << lf << "\" skipped=\"" << ls << "\">\n";
    if (!lab.error.empty() || !lab.build_errors.empty())
      s << "    <system-out>"
        << xml_escape(lab.error + "\n" + lab.compile_problem() + "\n" + lab.build_errors)
        << "</system-out>\n";
    for (const auto& c : lab.checks) {
      s << "    <testcase classname=\"lab" << xml_escape(lab.lab) << "\" name=\""
        << xml_escape(c.name) << "\">\n";
      const std::string text = c.reason + (c.details.empty() ? "" : "\n" + c.details);
      if (c.status == Status::kSkipped) {
        s << "      <skipped message=\"" << xml_escape(c.reason) << "\"/>\n";
      } else if (c.status != Status::kPassed) {
        s << "      <failure message=\"" << xml_escape(c.reason) << "\" type=\""
          << to_string(c.status) << "\">"
          << xml_escape(pts(c.score) + " / " + pts(c.max_score) + " points: " + text)
          << "</failure>\n";
      }
      s << "      <system-out>" << xml_escape(pts(c.score) + " / " + pts(c.max_score) + " points")
        << "</system-out>\n";
      s << "    </testcase>\n";
    }
    s << "  </testsuite>\n";
  }
  s << "</testsuites>\n";
  return s.str();
}

void write_atomic(const fs::path& path, const std::string& content) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  write_file_nofollow(path, content);  // a temporary file beside it, never through a link
}

void write_reports(const GradeResult& r, const fs::path& out_dir) {
  constexpr auto replace = nlohmann::json::error_handler_t::replace;
  write_atomic(out_dir / "results.json", gradescope_json(r).dump(2, ' ', false, replace) + "\n");
  write_atomic(out_dir / "report.json", report_json(r).dump(2, ' ', false, replace) + "\n");
  write_atomic(out_dir / "junit.xml", junit_xml(r));
  write_atomic(out_dir / "report.html", html_report(r));
}

}  // namespace gtl::grader
