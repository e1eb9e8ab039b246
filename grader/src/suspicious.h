// Lines of a submission's student files that a person should look at: the instructor's view of
// code that may be trying to beat the grader rather than solve the lab.
//
// Why: the grader contains and sandboxes what it can (docs/grader.md, "Trust model"), but code
// linked into a test program can still do what that program can. Lab code has no business
// starting processes, opening files, reading the environment or its own command line, using
// inline assembly or including files outside its folder; a line that does is not proof of
// cheating (a student may print a debug file), so it is listed for a person, never scored.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "rubric.h"

namespace gtl::grader {

struct SuspiciousLine {
  std::string where;     // "01-sum/sum.cpp:12"
  std::string category;  // process, file, environment, arguments, test harness, inline
                         // assembly, startup code, include
  std::string text;      // the line, trimmed and cut at 160 characters
};

// Scans the student files of `lab` in `submission` (comments are not skipped: a person reads the
// list, and a pattern hidden in a comment costs a glance).
std::vector<SuspiciousLine> suspicious_lines(const std::filesystem::path& submission,
                                             const Rubric& lab);

}  // namespace gtl::grader
