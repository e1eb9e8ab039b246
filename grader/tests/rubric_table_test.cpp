// The rubric table: generated from the rubric, and the handout's copy checked against it.
#include "rubric_table.h"

#include <gtest/gtest.h>

namespace gtl::grader {
namespace {

const char* kRubric = R"(lab: "01"
title: Sums
student_files: [sum.cpp]
checks:
  - {name: correct, type: test, points: 4, binary: t, tests: ["Sum.*", "Edge.Empty"]}
  - {name: prefix, type: test, points: 2.5, binary: t, tests: ["Prefix.*"], partial: true}
  - name: speed
    type: speed
    points: 2
    binary: b
    benchmark: BM_Sum/64
    baseline: BM_Ref/64
    min_speedup: 0.7
    partial_from: 0.4
    requires: gpu
  - {name: ratio, type: memory, points: 1, binary: b, benchmark: BM_Sum/64, baseline: BM_Ref/64,
     counter: peak, max_ratio: 0.01, requires: cuda}
  - {name: bound, type: memory, points: 1, binary: b, benchmark: BM_Sum/64, counter: peak,
     max_value: 600000}
  - {name: secret, type: test, points: 2, binary: h, tests: ["Hidden.*"], hidden: true}
)";

TEST(RubricTable, EveryVisibleCheckIsARowWithItsThreshold) {
  const Rubric lab = parse_rubric(kRubric, "rubric.yaml", "01-sum");
  EXPECT_EQ(
      rubric_table(lab),
      "| check | points | kind | measured | threshold | requires |\n"
      "|---|---|---|---|---|---|\n"
      "| correct | 4 | test | tests `Sum.*`, `Edge.Empty` of `t` | every test passes | cpu |\n"
      "| prefix | 2.5 | test | tests `Prefix.*` of `t` | each passing test earns its share | "
      "cpu |\n"
      "| speed | 2 | speed | speedup = real_time of `BM_Ref/64` / real_time of `BM_Sum/64` "
      "| ≥ 0.7, partial credit from 0.4 | gpu |\n"
      "| ratio | 1 | memory | `peak` of `BM_Sum/64` / the same of `BM_Ref/64` | ≤ 0.01 | "
      "cuda |\n"
      "| bound | 1 | memory | `peak` of `BM_Sum/64` | ≤ 600000 | cpu |\n")
      << "the hidden check 'secret' is the instructor's: it stays out of the handout";
}

TEST(RubricTable, TheHandoutsTableIsTheTextBetweenTheMarkers) {
  const std::string handout =
      "# Lab\n\ntext\n<!-- rubric-table:begin -->\n| a |\n|---|\n<!-- rubric-table:end -->\nmore\n";
  EXPECT_EQ(handout_table(handout, "README.md"), std::optional<std::string>("| a |\n|---|\n"));
  EXPECT_EQ(handout_table("# Lab\nno table\n", "README.md"), std::nullopt);
  EXPECT_EQ(with_handout_table(handout, "| b |\n"),
            "# Lab\n\ntext\n<!-- rubric-table:begin -->\n| b |\n<!-- rubric-table:end -->\nmore\n")
      << "--write replaces only the lines between the markers";
  EXPECT_THROW(handout_table("<!-- rubric-table:begin -->\nx\n", "README.md"), RubricError)
      << "a begin marker without its end";
  EXPECT_THROW(handout_table("<!-- rubric-table:end -->\n<!-- rubric-table:begin -->\n", "R.md"),
               RubricError)
      << "markers in the wrong order";
}

}  // namespace
}  // namespace gtl::grader
