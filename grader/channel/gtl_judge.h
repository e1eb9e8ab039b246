// The reading side of a judge (grader/src/judge.h): a program built from the course alone that
// reads the outputs a test recorded (gtl_judge_output.h), recomputes the references from the
// inputs the grading seed draws and decides the check.
//
// Why one helper: every lab's judge has the same shape, a table from the rubric's check name to a
// case that reads what the check's tests recorded and compares it with what the judge computes.
// gtl-grade runs `<judge> <check name>` after the check's tests; exit 0 accepts the outputs, and
// anything else (a rejection, a missing or short file, an unknown check) makes the check score 0
// with the judge's first line of output as the reason. So a case throws Rejection with one line
// that says which test, which input (and the seed), what the student's code gave and what was
// expected, and returns a one-line summary when it accepts.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "gtl_judge_output.h"
#include "gtl_test_seed.h"

namespace gtl::judge {

// Thrown by a case: why the outputs are rejected, one line.
struct Rejection : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The outputs one test recorded, read in the order it recorded them.
class Recorded {
 public:
  explicit Recorded(std::string test) : test_(std::move(test)) {
    const char* dir = std::getenv("GTL_JUDGE_OUTPUTS");
    if (dir == nullptr || *dir == 0)
      throw Rejection("GTL_JUDGE_OUTPUTS is not set: run the judge through gtl-grade");
    in_.open(std::string(dir) + "/" + test_ + ".txt");
    if (!in_)
      throw Rejection(test_ + " recorded no outputs (it did not run, or did not run to its end)");
  }

  // The next recorded value; `what` names it in the rejection when it is missing.
  template <typename T>
  T next(const std::string& what) {
    T value{};
    if (!read(value)) throw Rejection(test_ + ": no output recorded for " + what);
    return value;
  }
  // The next recorded line (a message, a description: text with spaces).
  std::string line(const std::string& what) {
    std::string text;
    if (!std::getline(in_ >> std::ws, text))
      throw Rejection(test_ + ": no output recorded for " + what);
    return text;
  }
  // The next digest (Outputs::record_digest), compared with the digest of `want`.
  template <typename T>
  void expect_digest(const std::vector<T>& want, const std::string& what) {
    if (next<std::uint64_t>(what) != digest(want.data(), want.size()))
      throw Rejection(test_ + ": " + what + " differs from what the judge computes");
  }
  // A sequence recorded with Outputs::record_all, of exactly `expected_size` elements.
  template <typename T>
  std::vector<T> sequence(const std::string& what, std::size_t expected_size) {
    const auto n = next<std::size_t>(what + " (its length)");
    if (n != expected_size)
      throw Rejection(test_ + ": " + what + " has " + std::to_string(n) + " elements, expected " +
                      std::to_string(expected_size));
    std::vector<T> values(n);
    for (std::size_t i = 0; i < n; ++i)
      if (!read(values[i]))
        throw Rejection(test_ + ": " + what + " ends after " + std::to_string(i) + " elements");
    return values;
  }
  // The highest level of a run's allocation events (Allocator::record_events), recorded as their
  // count then each change of allocated bytes, from the level `start`: a peak the judge derives
  // itself instead of trusting the figure a test reported.
  int64_t peak_of_events(const std::string& what, int64_t start = 0) {
    const auto n = next<std::size_t>(what + ": the number of allocation events");
    if (n > 10000000)
      throw Rejection(test_ + ": " + what + ": " + std::to_string(n) +
                      " allocation events in one step is not a run's");
    int64_t level = start, peak = start;
    for (std::size_t i = 0; i < n; ++i)
      peak = std::max(peak, level += next<int64_t>(what + ": an allocation event"));
    return peak;
  }
  const std::string& test() const { return test_; }

 private:
  // Floating values go through strtod so that "nan" and "inf", as a stream writes them, read back.
  template <typename T>
  bool read(T& value) {
    if constexpr (std::is_floating_point_v<T>) {
      std::string token;
      if (!(in_ >> token)) return false;
      char* end = nullptr;
      const double d = std::strtod(token.c_str(), &end);
      if (end == token.c_str() || *end != 0) return false;
      value = static_cast<T>(d);
      return true;
    } else {
      return static_cast<bool>(in_ >> value);
    }
  }

  std::string test_;
  std::ifstream in_;
};

// Formats a value for a rejection with enough digits to tell two floats apart.
template <typename T>
std::string show(const T& v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// Rejects unless got == want (NaN never equals).
template <typename T>
void expect_equal(const T& got, const T& want, const std::string& what) {
  if (!(got == want))
    throw Rejection(what + ": the student's code gave " + show(got) + ", the judge computes " +
                    show(want));
}

// Rejects unless |got - want| <= atol + rtol |want| for every element (NaN fails).
inline void expect_close(const std::vector<double>& want, const std::vector<float>& got,
                         double rtol, double atol, const std::string& what) {
  if (got.size() != want.size())
    throw Rejection(what + ": " + std::to_string(got.size()) + " values recorded, expected " +
                    std::to_string(want.size()));
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(want[i] - got[i]) <= atol + rtol * std::fabs(want[i])))
      throw Rejection(what + ": element " + std::to_string(i) + " is " + show(got[i]) +
                      ", the judge computes " + show(want[i]));
}

// One case per check of the rubric: reads the outputs, throws Rejection or returns a summary.
using Case = std::function<std::string()>;

// The judge's main(): `<judge> <check name>` runs that check's case. Exit 0 when it accepts, 1
// when it rejects (its reason on the first line), 2 when used wrongly.
inline int run(int argc, char** argv, const std::map<std::string, Case>& cases) {
  if (argc != 2 || cases.count(argv[1]) == 0) {
    std::cout << "usage: " << argv[0] << " <check>, one of:";
    for (const auto& [name, c] : cases) std::cout << " " << name;
    std::cout << " (gtl-grade runs it after the check's tests)\n";
    return 2;
  }
  try {
    const std::string summary = cases.at(argv[1])();
    std::cout << argv[1] << ": " << summary << " (" << gtl::test_seed::describe() << ")\n";
    return 0;
  } catch (const Rejection& r) {
    std::cout << r.what() << " (" << gtl::test_seed::describe() << ")\n";
  } catch (const std::exception& e) {
    std::cout << argv[1] << ": the judge could not read the outputs: " << e.what() << "\n";
  }
  return 1;
}

}  // namespace gtl::judge
