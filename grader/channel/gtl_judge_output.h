// What a test records for the judge (grader/src/judge.h): the outputs the student's code produced
// for the inputs the grading seed drew, one line each, in the order the judge will recompute them.
//
// Outside the grader (no GTL_JUDGE_OUTPUTS) nothing is written. The file is written once, when
// the test ends, so a test that crashes records nothing and the judge rejects the check.
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace gtl::judge {

class Outputs {
 public:
  explicit Outputs(std::string test) : test_(std::move(test)) {}
  ~Outputs() {
    const char* dir = std::getenv("GTL_JUDGE_OUTPUTS");
    if (dir != nullptr && *dir != 0)
      std::ofstream(std::string(dir) + "/" + test_ + ".txt", std::ios::trunc) << lines_.str();
  }
  Outputs(const Outputs&) = delete;
  Outputs& operator=(const Outputs&) = delete;

  template <typename T>
  void record(const T& value) {
    lines_ << value << "\n";
  }

 private:
  std::string test_;
  std::ostringstream lines_;
};

}  // namespace gtl::judge
