// grade, verify, batch and export-release.
#include "modes.h"
#include "files.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "calibration.h"
#include "process.h"
#include "report.h"
#include "rubric_table.h"
#include "sandbox.h"
#include "suspicious.h"
#include "todo_fingerprints.h"
#include "twin_check.h"
#include "verify_rules.h"

namespace gtl::grader {
namespace {

namespace fs = std::filesystem;

GradeOptions grade_options(const ModeOptions& o, const fs::path& submission, const fs::path& work) {
  GradeOptions g;
  g.course = o.course;
  g.submission = submission;
  g.work = work;
  g.out = o.out;
  g.seed = grading_seed(o, submission);
  g.checks = o.checks;
  g.cpu_only = o.cpu_only;
  g.include_hidden = o.include_hidden;
  g.cmake_args = o.cmake_args;
  g.progress = o.progress;
  return g;
}

// "lab01_a, lab01_b": the binaries of `lab` that do not compile.
std::string failed_list(const LabResult& lab) {
  std::string names;
  for (const auto& t : lab.failed_targets) names += (names.empty() ? "" : ", ") + t;
  return names.empty() ? "the lab" : names;
}

// A student's grading must not reach the instructor's solution/. With the sandbox, children see
// an empty folder in its place. Without it, the course is copied (without solution/, build/ and
// .git/, only the files that changed) into <work>/course and graded from there, so no relative
// path from the grading copy reaches the solution; an absolute path still can (docs/grader.md).
ModeOptions away_from_solution(const ModeOptions& o) {
  if (sandbox_support().available || !fs::is_directory(o.course / "solution")) return o;
  ModeOptions copy = o;
  copy.course = o.work / "course";
  const fs::path course = fs::canonical(o.course);
  if (o.progress)
    o.progress("no sandbox: grading from a copy of the course without solution/ in " +
               copy.course.string());
  const fs::path work = fs::weakly_canonical(o.work), out = fs::weakly_canonical(o.out);
  for (auto it = fs::recursive_directory_iterator(course); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path rel = fs::relative(it->path(), course);
    const std::string top = rel.begin()->string();
    if (top == "solution" || top == "build" || top == ".git" || it->path() == work ||
        it->path() == out) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) {
      sync_file(it->path(), copy.course / rel);
      fs::permissions(copy.course / rel, fs::status(it->path()).permissions());
    }
  }
  return copy;
}

}  // namespace

std::uint64_t grading_seed(const ModeOptions& o, const fs::path& submission) {
  if (o.seed) return *o.seed;
  if (const char* secret = std::getenv("GTL_GRADE_SECRET"); secret != nullptr && *secret) {
    std::uint64_t h = 1469598103934665603ull;  // FNV-1a of "<secret>/<submission folder name>"
    for (unsigned char c : std::string(secret) + "/" + submission.filename().string())
      h = (h ^ c) * 1099511628211ull;
    return h % 1000000000000ull;
  }
  return std::stoull(random_hex(10), nullptr, 16) % 1000000000000ull;
}

int run_grade(const ModeOptions& options, const fs::path& submission) {
  const ModeOptions o = away_from_solution(options);
  const std::vector<Rubric> labs = select_labs(load_course_rubrics(o.course), o.labs);
  if (labs.empty())
    throw GradeError(exit_codes::kUsage, "the course " + o.course.string() + " has no labs");
  const GradeResult result = grade_submission(grade_options(o, submission, o.work), labs);
  write_reports(result, o.out);
  std::cout << terminal_report(result, o.colour);
  std::cout << "\nReports: " << (o.out / "report.html").string() << " (also results.json, "
            << "report.json, junit.xml)\n";
  return result.exit_code;
}

// What verify found: problems fail it, notes are shown.
struct Findings {
  std::vector<std::string> problems, notes;
};

// The check-name column of a table over `labs`: the longest check name + 2, at least 28, so that
// no name is ever cut.
int check_column(const std::vector<Rubric>& labs) {
  std::size_t width = 28;
  for (const auto& lab : labs)
    for (const auto& c : lab.checks) width = std::max(width, c.name.size() + 2);
  return static_cast<int>(width);
}

bool covers_a_todo(const Rubric& lab, const std::string& check) {
  for (const auto& todo : lab.todos)
    if (std::find(todo.checks.begin(), todo.checks.end(), check) != todo.checks.end()) return true;
  return false;
}

// Verify's static half: the twins agree outside their TODO regions, each TODO has its region, the
// handout's rubric table is the rubric's, the recorded TODO fingerprints are the starter's, and
// every check covers a TODO.
void check_course_files(const ModeOptions& o, const Rubric& lab, Findings& f) {
  for (const auto& p : twin_problems(o.course, lab)) f.problems.push_back(p);
  bool no_table = false;
  if (const std::string p = handout_table_problem(o.course, lab, &no_table); !p.empty())
    f.problems.push_back(p);
  if (const std::string p = todo_fingerprints_problem(o.course, lab); !p.empty())
    f.problems.push_back(p);
  if (no_table)
    f.notes.push_back("lab " + lab.lab + ": the handout has no rubric table (" + kRubricTableBegin +
                      "): its thresholds are not checked against the rubric");
  for (const auto& c : lab.checks)
    if (!covers_a_todo(lab, c.name))
      f.notes.push_back("lab " + lab.lab + " check '" + c.name +
                        "' covers no TODO: the starter may earn its points");
  for (const auto& p : todos_that_earn_nothing(lab)) f.problems.push_back(p);
}

// Verify's graded half for one lab: both twins compile, the solution earns every check runnable
// here, the starter earns none of a TODO's. Prints one row per check.
void compare_twins_graded(const Rubric& lab, const LabResult& sol, const LabResult& sta, int width,
                          Findings& f) {
  auto shown = [](const CheckResult& c) {
    return c.status == Status::kSkipped ? "--/" + pts(c.max_score)
                                        : pts(c.score) + "/" + pts(c.max_score);
  };
  // Any binary that does not compile is a problem, even when the others built and ran.
  if (!sol.compile_problem().empty())
    f.problems.push_back("lab " + lab.lab + ": the solution does not compile (" + failed_list(sol) +
                         "):\n" + sol.build_errors);
  if (!sta.compile_problem().empty())
    f.problems.push_back("lab " + lab.lab + ": the starter does not compile (" + failed_list(sta) +
                         "; students must receive code that builds):\n" + sta.build_errors);
  for (const auto& s : sol.checks) {
    const auto it = std::find_if(sta.checks.begin(), sta.checks.end(),
                                 [&](const CheckResult& c) { return c.name == s.name; });
    if (it == sta.checks.end()) continue;
    const TwinVerdict v = verify_twins(lab.lab, s, *it, covers_a_todo(lab, s.name));
    if (!v.problem.empty()) f.problems.push_back(v.problem);
    if (!v.note.empty()) f.notes.push_back(v.note);
    std::cout << "  " << std::setw(6) << lab.lab << std::setw(width) << s.name << std::setw(14)
              << shown(s) << std::setw(14) << shown(*it) << v.verdict << "\n";
  }
}

int run_verify(const ModeOptions& o) {
  const std::vector<Rubric> labs = select_labs(load_course_rubrics(o.course), o.labs);
  if (labs.empty()) {
    std::cout
        << "verify: the course has no labs yet (no labs/NN-name/rubric.yaml): nothing to verify\n";
    return exit_codes::kOk;
  }
  Findings f;
  for (const auto& lab : labs) check_course_files(o, lab, f);

  if (o.progress) o.progress("verify: grading the solution");
  const GradeResult sol = grade_submission(grade_options(o, o.course / "solution", o.work), labs);
  write_reports(sol, o.out / "solution");
  if (o.progress) o.progress("verify: grading the starter");
  const GradeResult sta = grade_submission(grade_options(o, o.course / "starter", o.work), labs);
  write_reports(sta, o.out / "starter");
  if (!sol.error.empty()) f.problems.push_back("grading the solution: " + sol.error);
  if (!sta.error.empty()) f.problems.push_back("grading the starter: " + sta.error);

  std::cout << "\nverify: solution vs starter\n";
  const int width = check_column(labs);
  std::cout << "  " << std::left << std::setw(6) << "lab" << std::setw(width) << "check"
            << std::setw(14) << "solution" << std::setw(14) << "starter"
            << "verdict\n";
  for (std::size_t i = 0; i < labs.size() && i < sol.labs.size() && i < sta.labs.size(); ++i)
    compare_twins_graded(labs[i], sol.labs[i], sta.labs[i], width, f);
  for (const auto& n : f.notes) std::cout << "note: " << n << "\n";
  for (const auto& p : f.problems) std::cout << "PROBLEM: " << p << "\n";
  std::cout << (f.problems.empty() ? "\nverify: PASSED\n" : "\nverify: FAILED\n");
  std::cout << "Reports: " << (o.out / "solution").string() << ", " << (o.out / "starter").string()
            << "\n";
  return f.problems.empty() ? exit_codes::kOk : exit_codes::kVerifyFailed;
}

int run_calibrate(const ModeOptions& o) {
  const std::vector<Rubric> labs = select_labs(load_course_rubrics(o.course), o.labs);
  const std::string gpu = this_gpu_name(o.cpu_only || !gpu_available());
  if (o.progress) o.progress("calibrate: grading the solution on " + gpu);
  const GradeResult sol = grade_submission(grade_options(o, o.course / "solution", o.work), labs);
  write_reports(sol, o.out);
  int stored = 0, missing = 0;
  std::cout << "\ncalibrate: the solution's speedups on " << gpu << "\n";
  for (std::size_t i = 0; i < labs.size() && i < sol.labs.size(); ++i) {
    Calibration calibration = load_calibration(o.course, labs[i]);
    bool changed = false;
    for (const auto& c : sol.labs[i].checks) {
      if (c.kind != CheckKind::kSpeed) continue;
      const bool measured = c.status != Status::kSkipped && c.figure && std::isfinite(*c.figure) &&
                            *c.figure > 0 &&
                            c.reason.find("reported an error") == std::string::npos;
      std::cout << "  " << std::left << std::setw(6) << labs[i].lab << std::setw(check_column(labs))
                << c.name << (measured ? pts(*c.figure) + "x" : "not measured: " + c.reason)
                << "\n";
      if (!measured) {
        ++missing;
        continue;
      }
      calibration[gpu][c.name] = *c.figure;
      changed = true;
      ++stored;
    }
    if (changed) save_calibration(o.course, labs[i], calibration);
  }
  std::cout << "calibrate: " << stored << " figures stored in labs/*/calibration.json under \""
            << gpu << "\"" << (missing ? ", " + std::to_string(missing) + " not measured" : "")
            << "\n";
  return missing == 0 ? exit_codes::kOk : exit_codes::kVerifyFailed;
}

std::string csv_field(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::string> graded_submissions(const std::string& csv_text) {
  std::vector<std::string> names;
  std::string field;
  bool quoted = false, first_field = true, header = true;
  for (std::size_t i = 0; i < csv_text.size(); ++i) {
    const char c = csv_text[i];
    if (quoted) {
      if (c == '"' && i + 1 < csv_text.size() && csv_text[i + 1] == '"') {
        if (first_field) field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else if (first_field) {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',' && first_field) {
      first_field = false;
    } else if (c == '\n') {
      if (!header && !field.empty()) names.push_back(field);
      header = false;
      field.clear();
      first_field = true;
    } else if (first_field && c != '\r') {
      field += c;
    }
  }
  return names;  // a last line without '\n' was cut by a crash: it is graded again
}

std::string suspicious_report(const fs::path& submissions, const std::vector<Rubric>& labs) {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(submissions))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  std::ostringstream s;
  for (const auto& dir : dirs) {
    std::vector<SuspiciousLine> lines;
    for (const auto& lab : labs) {
      const auto found = suspicious_lines(resolve_submission(dir), lab);
      lines.insert(lines.end(), found.begin(), found.end());
    }
    if (lines.empty()) continue;
    s << dir.filename().string() << " (" << lines.size() << " line"
      << (lines.size() == 1 ? "" : "s") << " to look at)\n";
    for (const auto& l : lines)
      s << "  " << l.where << ": " << l.category << ": " << l.text << "\n";
  }
  return s.str();
}

int run_batch(const ModeOptions& options, const fs::path& submissions, const fs::path& csv) {
  const ModeOptions o = away_from_solution(options);
  if (!fs::is_directory(submissions))
    throw GradeError(exit_codes::kSubmission,
                     "the submissions folder " + submissions.string() + " does not exist");
  const std::vector<Rubric> labs = select_labs(load_course_rubrics(o.course), o.labs);
  std::string text = fs::exists(csv) ? read_file(csv) : "";
  if (text.empty()) {
    text = "submission,score,max_score,skipped_points";
    for (const auto& l : labs) text += ",lab" + l.lab;
    text += ",exit_code,error\n";
  }
  const std::vector<std::string> done_list = graded_submissions(text);
  const std::set<std::string> done(done_list.begin(), done_list.end());
  if (!text.empty() && text.back() != '\n') text = text.substr(0, text.rfind('\n') + 1);

  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(submissions))
    if (e.is_directory()) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  int graded = 0, skipped = 0;
  for (const auto& dir : dirs) {
    const std::string name = dir.filename().string();
    if (done.count(name)) {
      ++skipped;
      continue;
    }
    if (o.progress) o.progress("batch: grading " + name);
    std::string row;
    try {
      GradeOptions g = grade_options(o, dir, o.work);
      g.hidden.push_back(dir.parent_path());  // the other submissions of the batch
      const GradeResult r = grade_submission(g, labs);
      write_reports(r, o.out / name);
      // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict) on one long chain.
      row = csv_field(name);
      for (const double x : {r.score(), r.max_score(), r.skipped_points()}) (row += ',') += pts(x);
      for (const auto& l : r.labs) (row += ',') += pts(l.score());
      (row += ',') += std::to_string(r.exit_code);
      (row += ',') += csv_field(r.error.substr(0, 300));
    } catch (const std::exception& e) {
      row = csv_field(name) + ",0,0,0";
      for (std::size_t i = 0; i < labs.size(); ++i) row += ",0";
      row += "," + std::to_string(exit_codes::kInternal) + "," + csv_field(e.what());
    }
    text += row + "\n";
    write_atomic(csv, text);
    ++graded;
  }
  std::cout << "batch: graded " << graded << ", already in " << csv.string() << ": " << skipped
            << "\n";
  // For the instructor, never for the students: lines that use what lab code has no need of.
  const std::string suspicious = suspicious_report(submissions, labs);
  write_atomic(o.out / "suspicious.txt",
               "# gtl-grade batch: student code to look at (processes, files, environment, "
               "command line, test harness, inline assembly, includes outside the folder).\n" +
                   (suspicious.empty() ? std::string("# none\n") : suspicious));
  std::cout << "batch: " << (suspicious.empty() ? "no" : "some") << " submissions use what lab "
            << "code has no need of: " << (o.out / "suspicious.txt").string() << "\n";
  return exit_codes::kOk;
}

std::string release_rubric(const std::string& rubric_yaml) {
  YAML::Node root = YAML::Load(rubric_yaml);
  std::set<std::string> hidden;
  YAML::Node kept(YAML::NodeType::Sequence);
  for (auto c : root["checks"]) {
    if (c["hidden"] && c["hidden"].as<bool>()) {
      hidden.insert(c["name"].as<std::string>());
    } else {
      c.remove("judge");  // the release has no judges (labs/*/judge/ is left out)
      kept.push_back(c);
    }
  }
  root["checks"] = kept;
  if (root["todos"]) {
    for (auto todo : root["todos"]) {
      YAML::Node names(YAML::NodeType::Sequence);
      for (const auto& n : todo["checks"])
        if (!hidden.count(n.as<std::string>())) names.push_back(n);
      todo["checks"] = names;
    }
  }
  YAML::Emitter out;
  out << root;
  return "# Generated by gtl-grade export-release: hidden checks and judges removed.\n" +
         std::string(out.c_str()) + "\n";
}

int run_export_release(const ModeOptions& o, const fs::path& to) {
  if (fs::exists(to) && !fs::is_empty(to))
    throw GradeError(exit_codes::kUsage, "export-release: " + to.string() + " is not empty");
  const std::vector<Rubric> labs = load_course_rubrics(o.course);  // fails on a bad rubric
  const fs::path course = fs::canonical(o.course);
  auto excluded = [&](const fs::path& rel) {
    const std::string top = rel.begin()->string();
    if (top == "solution" || top == "build" || top == ".git") return true;
    // grader/tests/: the grader's own tests, whose fixtures are solutions with one flaw planted
    // (decoys) or a solution calling what a rubric forbids (guard proofs).
    if (top == "grader" && std::distance(rel.begin(), rel.end()) >= 2 &&
        std::next(rel.begin())->string() == "tests")
      return true;
    // labs/NN-name/hidden/: the sources of hidden tests; labs/NN-name/judge/: the judges, which
    // recompute what the tests check (reference code a student has no use for: a student's own
    // grading runs the tests without them, and the course's grading uses the course's copy).
    auto it = rel.begin();
    if (top != "labs" || std::distance(rel.begin(), rel.end()) < 3) return false;
    const std::string part = (++(++it))->string();
    return part == "hidden" || part == "judge";
  };
  int files = 0;
  for (auto it = fs::recursive_directory_iterator(course); it != fs::recursive_directory_iterator();
       ++it) {
    const fs::path rel = fs::relative(it->path(), course);
    if (excluded(rel)) {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory()) {
      fs::create_directories(to / rel);
    } else if (it->is_regular_file()) {
      fs::create_directories((to / rel).parent_path());
      if (rel.filename() == "rubric.yaml" && rel.begin()->string() == "labs") {
        write_atomic(to / rel, release_rubric(read_file(it->path())));
      } else {
        fs::copy_file(it->path(), to / rel, fs::copy_options::overwrite_existing);
        fs::permissions(to / rel, fs::status(it->path()).permissions());
      }
      ++files;
    }
  }
  // The release must still parse.
  load_course_rubrics(to);
  std::cout
      << "export-release: " << files << " files of " << labs.size() << " labs copied to "
      << to.string()
      << " (without solution/, labs/*/hidden/, labs/*/judge/, grader/tests/ and hidden checks)\n";
  return exit_codes::kOk;
}

}  // namespace gtl::grader
