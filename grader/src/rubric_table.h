// The rubric table: a lab's checks as a Markdown table, generated from its rubric.yaml.
//
// A handout that quotes its thresholds by hand drifts from the rubric that scores them. So each
// handout holds the generated table between `<!-- rubric-table:begin -->` and
// `<!-- rubric-table:end -->`; `gtl-grade rubric-table --lab NN` prints it, `--write` puts it into
// the handout, and `--check` (also run by `gtl-grade verify` and the CTest test
// grader_handout_tables) fails when a handout's table is not the rubric's. Hidden checks are left
// out: the handout is the students'.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "modes.h"
#include "rubric.h"

namespace gtl::grader {

inline constexpr const char* kRubricTableBegin = "<!-- rubric-table:begin -->";
inline constexpr const char* kRubricTableEnd = "<!-- rubric-table:end -->";

// The Markdown table of `lab`'s visible checks: check, points, kind, what is measured,
// threshold, requires. Ends with a newline.
std::string rubric_table(const Rubric& lab);

// The table between the markers of `handout` (without the marker lines), or nullopt when the
// handout has no markers. Throws RubricError naming the handout when they do not balance.
std::optional<std::string> handout_table(const std::string& handout, const std::string& name);

// `handout` with the text between its markers replaced by `table`.
std::string with_handout_table(const std::string& handout, const std::string& table);

// The problem with lab's handout (labs/<dir>/README.md), naming the first differing table line
// and the command that regenerates the table, or "" when its table is the rubric's.
// A handout without the markers is not a problem here; `missing` is then set.
std::string handout_table_problem(const std::filesystem::path& course, const Rubric& lab,
                                  bool* missing = nullptr);

// `gtl-grade rubric-table`: prints the table of every selected lab; with `write`, puts it into
// each handout; with `check`, compares instead and returns kVerifyFailed on a difference.
int run_rubric_table(const ModeOptions& o, bool write, bool check);

}  // namespace gtl::grader
