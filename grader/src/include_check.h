// What the student's code #includes, read from the compiler's own dependency records.
//
// Why, beside the sandbox: where no sandbox runs, a student file can include the instructor's
// solution (`#include "../../solution/01-sum/sum.cpp"` resolves through the lab's include path),
// a hidden test's data, or any file of the machine; and even under the sandbox, including a
// pristine test or benchmark source is a way to read what it checks. The compiler records every
// file each object was built from (-MD); Ninja keeps those records (`ninja -t deps`). A student
// object may depend on the student's own files, the lab's public headers (labs/NN-name/, but not
// its tests/, bench/ or hidden/ folders), the core's headers (common/), files the build
// generated, system headers (/usr, /opt), and the headers of dependencies the instructor's
// configure arguments point at (dependency_roots: a GPU machine's unpacked packages may lie
// inside the course folder). Anything else is named, and the lab's checks fail.
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

// The folders of dependencies named by the configure arguments (-DCMAKE_PREFIX_PATH,
// -DCMAKE_INCLUDE_PATH, -DGTL_*_INCLUDE, ';'-separated lists, relative ones against `course`):
// their headers are system headers. A folder that holds the course, the grading folder `work`,
// or lies inside the course's labs/, solution/ or starter/ is not one: it would let a student
// file include what it must not.
std::vector<std::filesystem::path> dependency_roots(const std::vector<std::string>& cmake_args,
                                                    const std::filesystem::path& course,
                                                    const std::filesystem::path& work);

// Objects built from `lab`'s student files in `build_dir`, and their forbidden dependencies.
// `impl` is the starter-shaped copy the build compiles the student's files from; headers under
// `dependencies` (dependency_roots) are allowed.
std::vector<ForbiddenInclude> forbidden_includes(
    const std::filesystem::path& build_dir, const std::filesystem::path& impl,
    const std::filesystem::path& course, const Rubric& lab,
    const std::vector<std::filesystem::path>& dependencies = {});

// "a.cpp includes x.h; ...", at most `shown` entries, then how many more (the list can run to
// hundreds: every header a forbidden one pulls in).
std::string describe_forbidden(const std::vector<ForbiddenInclude>& found, std::size_t shown = 6);

// Parses `ninja -t deps` output: object -> its dependencies (first: its source), paths as given.
std::vector<std::pair<std::string, std::vector<std::string>>> parse_ninja_deps(
    const std::string& text);

}  // namespace gtl::grader
