// How grading fails: one error type carrying the documented exit code of gtl-grade
// (docs/grader.md, "Exit codes"), thrown by every part of the grader and turned into the exit
// status and the reports' error line by main.cpp.
#pragma once

#include <stdexcept>
#include <string>

namespace gtl::grader {

// An error that ends grading with a documented exit code (docs/grader.md).
class GradeError : public std::runtime_error {
 public:
  GradeError(int exit_code, const std::string& what)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

namespace exit_codes {
constexpr int kOk = 0;
constexpr int kVerifyFailed = 1;
constexpr int kUsage = 2;
constexpr int kRubric = 3;
constexpr int kSubmission = 4;
constexpr int kEnvironment = 5;
constexpr int kInternal = 6;
}  // namespace exit_codes

}  // namespace gtl::grader
