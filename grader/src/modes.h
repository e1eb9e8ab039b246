// The grader's subcommands: grade, verify, batch and export-release (docs/grader.md).
// Each returns the process exit code; every one that grades writes its results files first.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "grade.h"

namespace gtl::grader {

struct ModeOptions {
  std::filesystem::path course;
  std::filesystem::path work;
  std::filesystem::path out;
  std::vector<std::string> labs;    // ids or folder names; empty: all
  std::vector<std::string> checks;  // check names; empty: all
  bool cpu_only = false;
  bool include_hidden = true;
  bool colour = false;
  std::vector<std::string> cmake_args;
  std::function<void(const std::string&)> progress;
  std::optional<std::uint64_t> seed;  // --seed; else from GTL_GRADE_SECRET, else random
};

// The grading seed of one submission: --seed when given; else derived from the instructor's
// secret (GTL_GRADE_SECRET) and the submission's folder name, so a rerun repeats it and students
// cannot compute it; else random. Every report records it.
std::uint64_t grading_seed(const ModeOptions& o, const std::filesystem::path& submission);

// Grades one submission and writes results.json, report.json, junit.xml, report.html to `out`.
int run_grade(const ModeOptions& o, const std::filesystem::path& submission);

// Instructor: the solution earns full marks on every check runnable here and the starter fails
// every check that covers a TODO. Nonzero when any check cannot tell them apart.
int run_verify(const ModeOptions& o);

// Instructor: grades solution/ on this machine and stores each speed check's figure, for this
// machine's GPU, in labs/NN-name/calibration.json (calibration.h). Exit 1 when a speed check
// could not be measured (failed or skipped), 0 otherwise.
int run_calibrate(const ModeOptions& o);

// Every subfolder of `submissions` is graded into `out/<name>/`; one CSV row each in `csv`.
// Rows already in the CSV are skipped, so an interrupted batch resumes where it stopped.
int run_batch(const ModeOptions& o, const std::filesystem::path& submissions,
              const std::filesystem::path& csv);

// Copies the course to `to` without solution/, labs/*/hidden/ and hidden checks.
int run_export_release(const ModeOptions& o, const std::filesystem::path& to);

// One CSV field, quoted when it needs to be.
std::string csv_field(const std::string& field);
// The first field of every data row of a gradebook CSV (the submissions already graded).
std::vector<std::string> graded_submissions(const std::string& csv_text);

// The instructor's view of a batch: for every submission under `submissions`, the lines of its
// student files that use processes, files, the environment, the command line, the test harness,
// inline assembly or includes outside its folder (suspicious.h). Empty when there are none.
std::string suspicious_report(const std::filesystem::path& submissions,
                              const std::vector<Rubric>& labs);
// A rubric's YAML for the students' release: without hidden checks (and without references to
// them in todos) and without the checks' judges.
std::string release_rubric(const std::string& rubric_yaml);

}  // namespace gtl::grader
