// What the student's code #includes, read from the compiler's own dependency records.
//
// Why, beside the sandbox: where no sandbox runs, a student file can include the instructor's
// solution (`#include "../../solution/01-sum/sum.cpp"` resolves through the lab's include path),
// a hidden test's data, or any file of the machine; and even under the sandbox, including a
// pristine test or benchmark source is a way to read what it checks. The compiler records every
// file each object was built from (-MD); Ninja keeps those records (`ninja -t deps`). A student
// object may depend on the student's own files, the lab's public headers (labs/NN-name/, but not
// its tests/, bench/ or hidden/ folders), the core's headers (common/), files the build
// generated, and system headers (/usr, /opt). Anything else is named, and the lab's checks fail.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "rubric.h"

namespace gtl::grader {

struct ForbiddenInclude {
  std::string object;    // the student object, e.g. "01-sum/sum.cpp"
  std::string included;  // the file it must not include, relative to the course when inside it
};

// Objects built from `lab`'s student files in `build_dir`, and their forbidden dependencies.
// `impl` is the starter-shaped copy the build compiles the student's files from.
std::vector<ForbiddenInclude> forbidden_includes(const std::filesystem::path& build_dir,
                                                 const std::filesystem::path& impl,
                                                 const std::filesystem::path& course,
                                                 const Rubric& lab);

// Parses `ninja -t deps` output: object -> its dependencies (first: its source), paths as given.
std::vector<std::pair<std::string, std::vector<std::string>>> parse_ninja_deps(
    const std::string& text);

}  // namespace gtl::grader
