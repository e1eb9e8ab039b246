// The rubric table of a lab and the handout's copy of it (rubric_table.h).
#include "rubric_table.h"
#include "files.h"

#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "build.h"
#include "grade.h"
#include "report.h"
#include "todo_fingerprints.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

// 0.7, 1.5, 10: the shortest form that reads back as the rubric's number.
std::string number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

std::string code(const std::string& name) {
  std::string escaped;
  for (char c : name) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
  return "`" + escaped + "`";
}

std::string measured(const Check& c) {
  switch (c.kind) {
    case CheckKind::kTest: {
      std::string tests;
      for (const auto& t : c.tests) tests += (tests.empty() ? "" : ", ") + code(t);
      return "tests " + tests + " of " + code(c.binary);
    }
    case CheckKind::kSpeed:
      return "speedup = " + c.metric + " of " + code(c.baseline) + " / " + c.metric + " of " +
             code(c.benchmark);
    case CheckKind::kMemory:
      return code(c.counter) + " of " + code(c.benchmark) +
             (c.max_ratio ? " / the same of " + code(c.baseline) : "");
  }
  return "";
}

std::string threshold(const Check& c) {
  switch (c.kind) {
    case CheckKind::kTest:
      return c.partial ? "each passing test earns its share" : "every test passes";
    case CheckKind::kSpeed: {
      std::string t = "≥ " + number(c.min_speedup);
      if (c.partial_from) t += ", partial credit from " + number(*c.partial_from);
      if (c.min_fraction_of_solution) {
        t += "; on a calibrated GPU ≥ " + number(*c.min_fraction_of_solution) +
             " × the solution's speedup";
        if (c.partial_from_fraction) t += ", partial from " + number(*c.partial_from_fraction);
      }
      return t;
    }
    case CheckKind::kMemory:
      return "≤ " + number(c.max_ratio ? *c.max_ratio : c.max_value.value_or(0));
  }
  return "";
}

std::string requirement(const Check& c) {
  if (c.requires_gpu) return "gpu";
  if (c.requires_cuda) return "cuda";
  return "cpu";
}

bool is_marker(const std::string& line, const char* marker) {
  const auto b = line.find_first_not_of(" \t");
  const auto e = line.find_last_not_of(" \t\r");
  return b != std::string::npos && line.substr(b, e - b + 1) == marker;
}

// The line indices (0-based) of the two markers; {-1, -1} when there are none.
std::pair<int, int> marker_lines(const std::vector<std::string>& lines, const std::string& name) {
  int begin = -1, end = -1;
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    const std::string& line = lines[static_cast<std::size_t>(i)];
    const bool b = is_marker(line, kRubricTableBegin), e = is_marker(line, kRubricTableEnd);
    if ((b && begin >= 0) || (e && end >= 0))
      throw RubricError(name + ":" + std::to_string(i + 1) + ": a second " +
                        (b ? kRubricTableBegin : kRubricTableEnd) + " line");
    if (b) begin = i;
    if (e) end = i;
  }
  if ((begin < 0) != (end < 0) || end < begin)
    throw RubricError(name + ": " + kRubricTableBegin + " and " + kRubricTableEnd +
                      " must both be there, in this order");
  return {begin, end};
}

}  // namespace

std::string rubric_table(const Rubric& lab) {
  std::ostringstream s;
  s << "| check | points | kind | measured | threshold | requires |\n";
  s << "|---|---|---|---|---|---|\n";
  for (const Check& c : lab.checks) {
    if (c.hidden) continue;
    s << "| " << c.name << " | " << number(c.points) << " | " << to_string(c.kind) << " | "
      << measured(c) << " | " << threshold(c) << " | " << requirement(c) << " |\n";
  }
  return s.str();
}

std::optional<std::string> handout_table(const std::string& handout, const std::string& name) {
  const std::vector<std::string> lines = split_lines(handout);
  const auto [begin, end] = marker_lines(lines, name);
  if (begin < 0) return std::nullopt;
  std::string table;
  for (int i = begin + 1; i < end; ++i) table += lines[static_cast<std::size_t>(i)] + "\n";
  return table;
}

std::string with_handout_table(const std::string& handout, const std::string& table) {
  const std::vector<std::string> lines = split_lines(handout);
  const auto [begin, end] = marker_lines(lines, "the handout");
  if (begin < 0) return handout;
  std::string out;
  for (int i = 0; i <= begin; ++i) out += lines[static_cast<std::size_t>(i)] + "\n";
  out += table;
  for (int i = end; i < static_cast<int>(lines.size()); ++i)
    out += lines[static_cast<std::size_t>(i)] + "\n";
  return out;
}

std::string handout_table_problem(const fs::path& course, const Rubric& lab, bool* missing) {
  const std::string name = "labs/" + lab.dir + "/README.md";
  const std::optional<std::string> table = handout_table(read_file(course / name), name);
  if (missing) *missing = !table;
  if (!table) return "";
  const std::string want = rubric_table(lab);
  if (*table == want) return "";
  const std::vector<std::string> have_lines = split_lines(*table), want_lines = split_lines(want);
  std::size_t i = 0;
  while (i < have_lines.size() && i < want_lines.size() && have_lines[i] == want_lines[i]) ++i;
  const std::string have_line = i < have_lines.size() ? have_lines[i] : "(the table ends)";
  const std::string want_line = i < want_lines.size() ? want_lines[i] : "(the table ends)";
  return name + ": the rubric table differs from labs/" + lab.dir + "/rubric.yaml at table line " +
         std::to_string(i + 1) + ": the handout has `" + have_line + "`, the rubric gives `" +
         want_line + "`; regenerate it with: gtl-grade rubric-table --lab " + lab.lab +
         " --write --course " + course.string();
}

int run_rubric_table(const ModeOptions& o, bool write, bool check) {
  const std::vector<Rubric> labs = select_labs(load_course_rubrics(o.course), o.labs);
  int failed = 0;
  for (const Rubric& lab : labs) {
    const fs::path handout = o.course / "labs" / lab.dir / "README.md";
    if (check) {
      bool missing = false;
      const std::string problem = handout_table_problem(o.course, lab, &missing);
      if (missing) std::cout << "lab " << lab.lab << ": the handout has no rubric table\n";
      const std::string stale = todo_fingerprints_problem(o.course, lab);
      if (!stale.empty()) std::cout << "PROBLEM: " << stale << "\n";
      if (!problem.empty()) std::cout << "PROBLEM: " << problem << "\n";
      if (!problem.empty() || !stale.empty()) ++failed;
    } else if (write) {
      const fs::path prints = todo_fingerprints_path(o.course, lab);
      write_atomic(prints, todo_fingerprints_text(o.course, lab));
      std::cout << "rubric-table: wrote the TODO fingerprints of lab " << lab.lab << " into "
                << prints.string() << "\n";
      const std::string text = read_file(handout);
      if (!handout_table(text, handout.string()))
        throw GradeError(exit_codes::kUsage, handout.string() + " has no " + kRubricTableBegin +
                                                 " / " + kRubricTableEnd + " lines to fill");
      write_atomic(handout, with_handout_table(text, rubric_table(lab)));
      std::cout << "rubric-table: wrote the table of lab " << lab.lab << " into "
                << handout.string() << "\n";
    } else {
      if (labs.size() > 1) std::cout << "\nLab " << lab.lab << " (" << lab.dir << "):\n\n";
      std::cout << rubric_table(lab);
    }
  }
  if (check)
    std::cout << "rubric-table: "
              << (failed ? "FAILED"
                         : "every handout table matches its rubric and every "
                           "lab's TODO fingerprints match its starter")
              << "\n";
  return failed ? exit_codes::kVerifyFailed : exit_codes::kOk;
}

}  // namespace gtl::grader
