// What a test records for the judge (grader/src/judge.h): the outputs the student's code produced
// for the inputs the grading seed drew, one line each, in the order the judge will recompute them.
//
// Outside the grader (no GTL_JUDGE_OUTPUTS) nothing is written. The file is written once, when
// the test ends, so a test that crashes records nothing and the judge rejects the check. Floating
// values are written with enough digits to read back the same bits (max_digits10 of their type),
// so a judge can compare exactly where the test does. The reading side is gtl_judge.h.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

namespace gtl::judge {

class Outputs {
 public:
  explicit Outputs(std::string test) : test_(std::move(test)) {
    lines_.precision(std::numeric_limits<double>::max_digits10);
  }
  ~Outputs() {
    const char* dir = std::getenv("GTL_JUDGE_OUTPUTS");
    if (dir != nullptr && *dir != 0)
      std::ofstream(std::string(dir) + "/" + test_ + ".txt", std::ios::trunc) << lines_.str();
  }
  Outputs(const Outputs&) = delete;
  Outputs& operator=(const Outputs&) = delete;

  template <typename T>
  void record(const T& value) {
    put(value);
    lines_ << "\n";
  }
  // A sequence: its length, then its elements on one line (a judge reads them back with
  // Recorded::sequence in gtl_judge.h).
  template <typename Range>
  void record_all(const Range& values) {
    std::size_t n = 0;
    for (const auto& v : values) (void)v, ++n;
    lines_ << n << "\n";
    for (const auto& v : values) put(v), lines_ << " ";
    lines_ << "\n";
  }
  // A digest of n values' bytes (digest() below), for results the test requires bit for bit: the
  // judge recomputes the expected values and compares digests, so large outputs cost one line.
  template <typename T>
  void record_digest(const T* values, std::size_t n);
  template <typename T>
  void record_all(const T* values, std::size_t n) {
    lines_ << n << "\n";
    for (std::size_t i = 0; i < n; ++i) put(values[i]), lines_ << " ";
    lines_ << "\n";
  }

 private:
  // A float with the 9 digits that read back its bits (smaller files), anything else as it is.
  template <typename T>
  void put(const T& value) {
    if constexpr (std::is_same_v<T, float>) {
      lines_.precision(std::numeric_limits<float>::max_digits10);
      lines_ << value;
      lines_.precision(std::numeric_limits<double>::max_digits10);
    } else {
      lines_ << value;
    }
  }

  std::string test_;
  std::ostringstream lines_;
};

// FNV-1a over the bytes of n values: equal digests mean equal bits (NaN payloads included).
template <typename T>
std::uint64_t digest(const T* values, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(values);
  for (std::size_t i = 0; i < n * sizeof(T); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

template <typename T>
void Outputs::record_digest(const T* values, std::size_t n) {
  lines_ << digest(values, n) << "\n";
}

}  // namespace gtl::judge
