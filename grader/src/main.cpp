// gtl-grade: grade a lab submission, verify a course, grade a folder of submissions, or export
// the student release. docs/grader.md documents every option, field and exit code.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "modes.h"
#include "process.h"
#include "report.h"
#include "rubric_table.h"

namespace fs = std::filesystem;
using namespace gtl::grader;

// Grading could not start (bad rubric, unknown lab, no course): the results files still say so,
// replacing any earlier ones, so an autograder never shows a stale score.
static void write_failure_reports(const fs::path& out, const std::string& why, int code) {
  try {
    GradeResult r;
    r.error = why;
    r.exit_code = code;
    write_reports(r, out);
  } catch (const std::exception& e) {
    std::cerr << "gtl-grade: cannot write the results to " << out.string() << ": " << e.what()
              << "\n";
  }
}

static int run_main(int argc, char** argv) {
  // `gtl-grade` and `gtl-grade --lab 01` mean `gtl-grade grade ...`.
  std::vector<std::string> args(argv, argv + argc);
  static const std::vector<std::string> commands = {
      "grade", "verify", "calibrate", "batch", "export-release", "rubric-table", "--help", "-h"};
  if (args.size() == 1 || std::find(commands.begin(), commands.end(), args[1]) == commands.end())
    args.insert(args.begin() + 1, "grade");

  CLI::App app{"gtl-grade: the GPU Training Labs grader (docs/grader.md)"};
  app.require_subcommand(1);
  ModeOptions o;
  std::string course = GTL_GRADER_DEFAULT_COURSE, work, out;
  bool quiet = false;
  std::optional<std::uint64_t> seed;
  auto common = [&](CLI::App* cmd) {
    cmd->add_option("--course", course, "the pristine course root")->capture_default_str();
    cmd->add_option("--work", work, "private build folder (default <course>/build/gtl-grade/work)");
    cmd->add_option("--out", out,
                    "where the reports go (default <course>/build/gtl-grade/results)");
    cmd->add_option("--lab", o.labs, "only these labs (\"01\" or \"01-name\"; repeatable)");
    cmd->add_option("--checks", o.checks,
                    "only these checks, by name (repeatable, or comma-separated)")
        ->delimiter(',');
    cmd->add_flag("--cpu-only", o.cpu_only, "grade as if there were no GPU");
    cmd->add_option("--cmake-arg", o.cmake_args, "extra argument for configuring the course");
    cmd->add_flag("-q,--quiet", quiet, "no progress lines");
    cmd->add_option("--seed", seed,
                    "grading seed for the tests' extra shapes (default: from GTL_GRADE_SECRET, "
                    "else random; recorded in the reports)");
  };
  std::string submission, submissions, csv, release_to;
  bool no_hidden = false;
  CLI::App* grade = app.add_subcommand("grade", "grade one submission (default: <course>/starter)");
  common(grade);
  grade->add_option("--submission", submission, "a starter-shaped tree or a clone of the course");
  grade->add_flag("--no-hidden", no_hidden, "leave out hidden checks");
  CLI::App* verify = app.add_subcommand("verify", "instructor: solution full marks, starter fails");
  common(verify);
  CLI::App* calibrate =
      app.add_subcommand("calibrate", "instructor: store the solution's speedups on this GPU");
  common(calibrate);
  CLI::App* batch = app.add_subcommand("batch", "grade every subfolder of a folder into a CSV");
  common(batch);
  batch->add_option("--submissions", submissions, "folder of submissions")->required();
  batch->add_option("--csv", csv, "gradebook (default <out>/gradebook.csv)");
  batch->add_flag("--no-hidden", no_hidden, "leave out hidden checks");
  CLI::App* release = app.add_subcommand("export-release", "copy the course for students");
  release->add_option("--course", course, "the pristine course root")->capture_default_str();
  release->add_option("--to", release_to, "an empty or new folder")->required();

  CLI::App* table = app.add_subcommand("rubric-table", "print a lab's checks as a Markdown table");
  bool table_write = false, table_check = false;
  table->add_option("--course", course, "the pristine course root")->capture_default_str();
  table->add_option("--lab", o.labs, "only these labs (\"01\" or \"01-name\"; repeatable)");
  table->add_flag("--write", table_write,
                  "put each table into its handout, between the markers, and write each lab's "
                  "todo_fingerprints.txt");
  table->add_flag(
      "--check", table_check,
      "fail when a handout's table is not its rubric's, or a lab's TODO fingerprints are stale");

  try {
    std::vector<const char*> cargs;
    for (const auto& a : args) cargs.push_back(a.c_str());
    app.parse(static_cast<int>(cargs.size()), cargs.data());
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : exit_codes::kUsage;
  }

  o.course = fs::absolute(course);
  o.work = work.empty() ? o.course / "build" / "gtl-grade" / "work" : fs::absolute(work);
  o.out = out.empty() ? o.course / "build" / "gtl-grade" / "results" : fs::absolute(out);
  o.include_hidden = !no_hidden;
  o.seed = seed;
  o.colour = isatty(1) && std::getenv("NO_COLOR") == nullptr;
  const auto start = std::chrono::steady_clock::now();
  if (!quiet)
    o.progress = [start](const std::string& line) {
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cerr << "gtl-grade [" << static_cast<int>(t) << "s] " << line << std::endl;
    };

  try {
    if (!fs::is_directory(o.course / "labs"))
      throw GradeError(exit_codes::kUsage,
                       "--course " + o.course.string() + " is not a course (it has no labs/)");
    if (release->parsed()) return run_export_release(o, fs::absolute(release_to));
    if (table->parsed()) return run_rubric_table(o, table_write, table_check);
    if (verify->parsed()) {
      if (out.empty()) o.out = o.course / "build" / "gtl-grade" / "verify";
      if (work.empty()) o.work = o.course / "build" / "gtl-grade" / "verify-work";
      return run_verify(o);
    }
    if (calibrate->parsed()) {
      if (out.empty()) o.out = o.course / "build" / "gtl-grade" / "calibrate";
      if (work.empty()) o.work = o.course / "build" / "gtl-grade" / "verify-work";
      return run_calibrate(o);
    }
    if (batch->parsed())
      return run_batch(o, fs::absolute(submissions),
                       csv.empty() ? o.out / "gradebook.csv" : fs::absolute(csv));
    return run_grade(o, submission.empty() ? o.course / "starter" : fs::absolute(submission));
  } catch (const RubricError& e) {
    std::cerr << "gtl-grade: malformed rubric: " << e.what() << "\n";
    if (grade->parsed()) write_failure_reports(o.out, e.what(), exit_codes::kRubric);
    return exit_codes::kRubric;
  } catch (const GradeError& e) {
    std::cerr << "gtl-grade: " << e.what() << "\n";
    // Results go where they were asked for, or into a course that exists; never a stray folder.
    if (grade->parsed() && (!out.empty() || fs::is_directory(o.course / "labs")))
      write_failure_reports(o.out, e.what(), e.exit_code());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "gtl-grade: internal error: " << e.what() << "\n";
    if (grade->parsed()) write_failure_reports(o.out, e.what(), exit_codes::kInternal);
    return exit_codes::kInternal;
  }
}

int main(int argc, char** argv) {
  const int code = run_main(argc, argv);
  // run_process already kills what each program leaves; this is the last guard: the grader never
  // exits while a process it started (or an orphan re-parented to it) is alive.
  kill_all_descendants();
  return code;
}
