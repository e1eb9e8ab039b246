// The judge: a verdict on correctness that no student code takes part in.
//
// Why: the student's code runs inside the test program, so whatever that program reports (its
// output, its JSON, even the verdict channel, for code written against the listener) can be
// forged. A judge is a separate program built from the course alone, like the checkers of
// programming-contest judges: the test program records the outputs the student's code produced
// for inputs drawn from the grading seed (gtl_judge_output.h), and the judge draws the same inputs
// from the same seed, computes the references itself and compares. Forging its verdict means
// producing the right outputs, which is the work. A test check names its judge in the rubric
// (`judge: <target>`); the check scores 0 unless the judge accepts the outputs.
#pragma once

#include <filesystem>
#include <string>

#include "process.h"
#include "scoring.h"

namespace gtl::grader {

// Runs `<judge> <check name>` (env: GTL_TEST_SEED and GTL_JUDGE_OUTPUTS, from `extras`): one
// judge program may judge every check of a lab (gtl_judge.h), and learns which from its argument.
// When it does not exit 0, fails `check` with the judge's first line of output as the reason.
void apply_judge(CheckResult& check, const std::filesystem::path& judge, const RunLimits& limits,
                 const RunExtras& extras);

}  // namespace gtl::grader
