// Grades one submission: copy its student files, build the lab's targets, run every check.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "build.h"
#include "rubric.h"
#include "scoring.h"

namespace gtl::grader {

struct GradeOptions {
  std::filesystem::path course;               // the pristine course
  std::filesystem::path submission;           // a starter-shaped tree (or a course clone)
  std::filesystem::path work;                 // private impl/ and build/ folders
  std::filesystem::path out;                  // the reports: no child process may see or write them
  std::vector<std::filesystem::path> hidden;  // more folders no child process may see
  std::uint64_t seed = 1;           // the grading seed, passed to every program as GTL_TEST_SEED
  std::vector<std::string> checks;  // only these check names (empty: all)
  bool cpu_only = false;            // treat the machine as having no GPU
  bool include_hidden = true;
  std::vector<std::string> cmake_args;
  std::function<void(const std::string&)> progress;
};

// The labs named by `ids` ("01" or "01-sum"); all when empty. Unknown ids: GradeError(kUsage).
std::vector<Rubric> select_labs(const std::vector<Rubric>& all,
                                const std::vector<std::string>& ids);

// Never throws for a problem of the submission or the machine: the result says what went wrong
// (error, exit_code) and every check not graded has 0 points with the reason.
GradeResult grade_submission(const GradeOptions& options, const std::vector<Rubric>& labs);

}  // namespace gtl::grader
