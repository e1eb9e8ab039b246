// Builds a submission against the pristine course, in a private folder.
//
// Only the rubric-listed files of a submission are copied, into a starter-shaped folder
// <work>/impl whose other files come from the course's own starter/. The course is configured
// with -DGTL_LABS_IMPL=<work>/impl in <work>/build, and only the lab's targets are built: tests,
// benchmarks, rubric and core always come from the pristine course.
#pragma once

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "errors.h"
#include "process.h"
#include "rubric.h"

namespace gtl::grader {

// A submission given as a course clone (has starter/ and labs/) grades its starter/.
std::filesystem::path resolve_submission(const std::filesystem::path& submission);

// Student files a submission lacks for `lab` ("01-sum/sum.cpp").
std::vector<std::string> missing_files(const std::filesystem::path& submission, const Rubric& lab);

// Lines still marked TODO(labNN) in the submission's files of `lab`: "sum.cpp:12: ...".
std::vector<std::string> open_todos(const std::filesystem::path& submission, const Rubric& lab);

// Fills <work>/impl: the course's starter/, then the listed files of `labs` from the submission.
// Files are rewritten only when their content changed, so rebuilds stay incremental.
void prepare_impl(const std::filesystem::path& course, const std::filesystem::path& submission,
                  const std::vector<const Rubric*>& labs, const std::filesystem::path& impl);

// "42s", "3m05s", "1h02m": how long a step has taken, for progress lines.
std::string elapsed_text(double seconds);

// Passes a long step's own progress on to the grader's progress callback, at most one line every
// `interval_s`, with the step's elapsed time: "building lab01_cpu_test: [37/212] Building CXX
// object ... (1m05s)". A build of the core takes minutes; silence for that long reads as a hang,
// while every ninja line would flood the terminal. Only progress lines pass: ninja's "[n/N] ..."
// and CMake's "-- ..." (configure); compiler output stays in the log. `clock` (seconds) is for
// tests; by default the steady clock.
class ProgressThrottle {
 public:
  using Sink = std::function<void(const std::string&)>;
  using Clock = std::function<double()>;
  ProgressThrottle(std::string what, Sink sink, double interval_s = 5, Clock clock = {});
  void line(const std::string& text);
  // "<what>: done (1m05s)", always printed: the end of the wait.
  void finish(const std::string& how = "done");

 private:
  std::string what_;
  Sink sink_;
  double interval_s_;
  Clock clock_;
  double start_ = 0;
  double last_shown_ = 0;
  bool shown_any_ = false;
};

struct BuildSettings {
  std::filesystem::path course;
  std::filesystem::path work;  // holds impl/ and build/
  std::vector<std::string> cmake_args;
  std::function<void(const std::string&)> progress;
  std::vector<std::string> sandbox;  // wraps configure and build commands (sandbox.h)
};

// The build folder whose compiled core the course build imports: the last -DGTL_PREBUILT_CORE=<dir>
// among `cmake_args` (-DGTL_PREBUILT_CORE= for none); without one, the build this grader was
// built in (or the one whose core it imported), when that build exported a core. The course's
// CMake (cmake/GtlPrebuiltCore.cmake) links it, never rebuilding it, when it was built with the
// same settings from the same sources (else it compiles its own core and says why): grading then
// compiles only the lab files. The build sandbox must be able to read it.
std::filesystem::path prebuilt_core_dir(const std::vector<std::string>& cmake_args);

// Configures <work>/build if it is not configured yet; throws GradeError(kEnvironment) on failure.
// GTL_PREBUILT_CORE is always passed (prebuilt_core_dir, maybe empty), or an earlier configure's
// choice would stick in the cache.
void configure_course(const BuildSettings& settings);

struct BuildOutcome {
  bool ok = false;     // every target built
  std::string errors;  // first compiler errors, trimmed
  std::string log;
  std::vector<std::string> failed;  // build_each_target: the targets that did not build
};
// One `cmake --build --target <targets...>` call: ok only when all of them built.
BuildOutcome build_targets(const BuildSettings& settings, const std::vector<std::string>& targets,
                           double timeout_s);

// Builds `targets` in one call and, only when that fails, each on its own (each within
// `timeout_s`) to tell which of them compile: one broken binary must not cost the checks of the
// others. `failed` lists the targets that did not build, in the given order; `errors` are the
// first compiler errors of the first of them.
BuildOutcome build_each_target(const BuildSettings& settings,
                               const std::vector<std::string>& targets, double timeout_s,
                               const std::function<void(const std::string&)>& progress = {});

// The first compiler errors of a build log, at most `max_lines` lines of at most 200 characters.
std::string first_errors(const std::string& log, std::size_t max_lines = 30);

// Where a built target's executable is: searched under <work>/build.
std::filesystem::path find_executable(const std::filesystem::path& build_dir,
                                      const std::string& target);

// True when the course configured in `build_dir` has the CUDA backend: GTL_CUDA is not OFF and
// CMake found a CUDA compiler (read from CMakeCache.txt).
bool build_has_cuda(const std::filesystem::path& build_dir);

// True when an NVIDIA GPU is visible (/dev/nvidia0 or /proc/driver/nvidia/gpus/*).
bool gpu_available();

// Copies a file only when the destination differs; returns true when it wrote.
bool sync_file(const std::filesystem::path& from, const std::filesystem::path& to);

}  // namespace gtl::grader
