// The rubric of one lab: what a submission may change, what its TODOs are and how it is scored.
//
// A rubric is labs/NN-name/rubric.yaml; docs/grader.md documents every field. Parsing is strict:
// an unknown key, a missing field or a wrong type is a RubricError that names file:line, so a typo
// in a rubric is caught when the instructor runs `gtl-grade verify`, not when students submit.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace gtl::grader {

// A rubric that cannot be used: `what()` reads "rubric.yaml:12: checks[2].points: expected ...".
class RubricError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class CheckKind { kTest, kSpeed, kMemory };
const char* to_string(CheckKind kind);

// One scored item. Which fields apply depends on `kind`.
struct Check {
  std::string name;
  CheckKind kind = CheckKind::kTest;
  double points = 0;
  std::string binary;  // CMake target = executable name (a GoogleTest or Google Benchmark program)
  bool requires_gpu = false;   // requires: gpu  (runs only where a GPU is visible)
  bool requires_cuda = false;  // requires: cuda (runs only when the CUDA backend is built)
  bool hidden = false;
  int line = 0;  // where it is in rubric.yaml, for messages

  // kTest: GoogleTest filter patterns ("Suite.*", "Suite.Name"); `partial` scores passed/total.
  std::vector<std::string> tests;
  bool partial = false;
  // kTest, optional: a program built from the course alone (no student code) that recomputes
  // the references from the grading seed and checks the outputs the tests recorded
  // (gtl_judge_output.h); the check scores 0 unless it accepts them (docs/grader.md, "Judge").
  std::string judge;

  // kSpeed: speedup = metric(baseline) / metric(benchmark), medians of one run.
  // Full points at speedup >= min_speedup; with partial_from, linear credit between the two.
  // kMemory: value = counter(benchmark), compared with max_value, or divided by counter(baseline)
  // and compared with max_ratio.
  std::string benchmark;
  std::string baseline;
  std::string metric = "real_time";  // kSpeed: real_time | cpu_time
  double min_speedup = 0;
  std::optional<double> partial_from;
  // kSpeed, calibrated (`gtl-grade calibrate`): where the lab's calibration.json has the
  // solution's speedup on this machine's GPU, full points at min_fraction_of_solution × that
  // figure, partial credit from partial_from_fraction × it; elsewhere min_speedup/partial_from.
  std::optional<double> min_fraction_of_solution;
  std::optional<double> partial_from_fraction;
  std::string counter;  // kMemory
  std::optional<double> max_value;
  std::optional<double> max_ratio;
};

struct Todo {
  std::string id;
  std::string file;
  std::vector<std::string> checks;  // names of the checks that fail while this TODO is open
  // Core symbols this TODO's student file must not reference (the core's own implementation of
  // what the TODO teaches): demangled-name prefixes such as "gtl::optim::LossScaler::". A
  // student object that references one scores this TODO's checks 0, naming the symbol.
  std::vector<std::string> forbidden;
};

// Limits for the child processes of this lab (rubric `limits:`), with the defaults.
struct Limits {
  double test_timeout_s = 120;   // one GoogleTest program run
  double bench_timeout_s = 300;  // one Google Benchmark program run
  double build_timeout_s = 900;  // building the lab's targets
  double memory_mb = 8192;       // resident memory of a program and its children
  std::size_t output_kb = 64;    // output kept per program run (the rest is counted, not kept)
  int repetitions = 5;           // --benchmark_repetitions; medians are compared
  double min_time_s = 0.1;       // --benchmark_min_time (a bare number: Google Benchmark 1.7)
  // Time caps: all the runs of one check (its reruns and its judge included), and all the checks
  // of one lab (not its build); past a cap the runs stop and what did not run scores 0.
  double check_timeout_s = 1200;
  double lab_timeout_s = 7200;
};

struct Rubric {
  std::string lab;    // "01"
  std::string title;  // "Vector add"
  std::string dir;    // "01-vector-add": labs/<dir>, starter/<dir>, solution/<dir>
  std::filesystem::path path;
  std::vector<std::string> student_files;
  std::vector<Todo> todos;
  std::vector<Check> checks;
  Limits limits;

  const Check* find_check(const std::string& name) const;
  double max_points() const;
};

// Parses rubric text; `path` names it in errors and `dir` is the lab's folder name.
Rubric parse_rubric(const std::string& text, const std::filesystem::path& path,
                    const std::string& dir);
Rubric load_rubric(const std::filesystem::path& rubric_yaml);

// Every lab of a course (labs/NN-*/rubric.yaml), sorted by folder name.
std::vector<Rubric> load_course_rubrics(const std::filesystem::path& course);

}  // namespace gtl::grader
