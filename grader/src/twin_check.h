// The twin check: starter and solution of a lab are one file with different TODO bodies.
//
// A TODO region starts at a comment line holding `TODO(labNN) step <id>` and ends at a comment
// line holding `END TODO(labNN)` (each a `//` comment on its own line); the solution marks the
// same lines `SOLUTION(labNN) step <id>` and `END SOLUTION(labNN)`, so that it holds no TODO
// markers. The starter puts the spec, a hint and a size budget inside; the solution its code.
// Outside the regions the twins must be identical line by line, so the two cannot drift: a fix to a
// comment, a declaration or an include made in one twin only is caught by `gtl-grade verify`,
// naming the file and line. The same regions also tell the grader which TODOs a submission has not
// started: a region whose text is still the starter's (docs/contributing.md, "TODO regions").
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "rubric.h"

namespace gtl::grader {

// One TODO region: its id ("1a") and the 1-based lines of its two marker lines.
struct TodoRegion {
  std::string id;
  int begin_line = 0;
  int end_line = 0;
};

// The regions of one file, and the first marker error (a region without an end, an end without
// a region, a step without an id) as "line N: what is wrong"; empty when the markers balance.
struct RegionScan {
  std::vector<TodoRegion> regions;
  std::string error;
};

// Finds the TODO(lab`lab`) regions of `text`.
RegionScan scan_todo_regions(const std::string& text, const std::string& lab);

// Compares one file's twins: same regions (ids, order, balanced markers) and identical lines
// outside them. `starter_name` and `solution_name` name the files in messages
// ("starter/01-x/a.cu"). Empty when they agree; else one message naming file and line.
std::string compare_twins(const std::string& starter, const std::string& solution,
                          const std::string& lab, const std::string& starter_name,
                          const std::string& solution_name);

// Every problem of a lab's twins under `course`: a rubric file missing from starter/ or
// solution/, a file there that the rubric does not list, twins that differ outside their
// regions, and a rubric TODO whose file has no region of that step (id "3" matches "3", "3a"...).
std::vector<std::string> twin_problems(const std::filesystem::path& course, const Rubric& lab);

// The TODO markers of a submission that are still open: "01-x/a.cu:12: TODO(lab01) step 1a" for
// every region whose text is still the pristine starter's. Pristine means the fingerprints
// recorded in <course>/labs/<dir>/todo_fingerprints.txt (todo_fingerprints.h), so that a
// submission that IS <course>/starter is judged right; a lab without that file falls back to
// comparing with <course>/starter. A file whose regions do not match the pristine ones (markers
// gone or renumbered) falls back to every line holding `TODO(labNN)`.
std::vector<std::string> open_todo_regions(const std::filesystem::path& course,
                                           const std::filesystem::path& submission,
                                           const Rubric& lab);

}  // namespace gtl::grader
