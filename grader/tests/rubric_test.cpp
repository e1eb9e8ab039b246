// Rubric parsing: a valid rubric gives every field; a malformed one names file:line and the fault.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "build.h"
#include "rubric.h"

namespace gtl::grader {
namespace {

const char* kValid = R"(lab: "02"
title: Matmul
student_files: [matmul.cpp, matmul.cu]
limits:
  test_timeout_s: 30
  repetitions: 7
todos:
  - id: tiled
    file: matmul.cu
    checks: [correct, speed]
checks:
  - name: correct
    type: test
    points: 5
    binary: lab02_test
    tests: ["Matmul.*", "Tiled.Small"]
    partial: true
  - name: speed
    type: speed
    points: 3
    binary: lab02_bench
    benchmark: BM_Tiled/1024
    baseline: BM_Naive/1024
    min_speedup: 4
    partial_from: 2
    requires: gpu
  - name: memory
    type: memory
    points: 2
    binary: lab02_bench
    benchmark: BM_Tiled/1024
    counter: peak_allocated_bytes
    baseline: BM_Naive/1024
    max_ratio: 0.5
    hidden: true
)";

// Parses `text` and returns the RubricError message ("" when it parsed).
std::string error_of(const std::string& text) {
  try {
    parse_rubric(text, "labs/02-matmul/rubric.yaml", "02-matmul");
  } catch (const RubricError& e) {
    return e.what();
  }
  return "";
}

TEST(Rubric, ParsesEveryField) {
  const Rubric r = parse_rubric(kValid, "rubric.yaml", "02-matmul");
  EXPECT_EQ(r.lab, "02");
  EXPECT_EQ(r.title, "Matmul");
  EXPECT_EQ(r.dir, "02-matmul");
  EXPECT_EQ(r.student_files, (std::vector<std::string>{"matmul.cpp", "matmul.cu"}));
  EXPECT_EQ(r.limits.test_timeout_s, 30);
  EXPECT_EQ(r.limits.repetitions, 7);
  EXPECT_EQ(r.limits.bench_timeout_s, Limits{}.bench_timeout_s) << "unset limits keep defaults";
  ASSERT_EQ(r.todos.size(), 1u);
  EXPECT_EQ(r.todos[0].checks, (std::vector<std::string>{"correct", "speed"}));
  ASSERT_EQ(r.checks.size(), 3u);
  EXPECT_EQ(r.checks[0].kind, CheckKind::kTest);
  EXPECT_EQ(r.checks[0].tests, (std::vector<std::string>{"Matmul.*", "Tiled.Small"}));
  EXPECT_TRUE(r.checks[0].partial);
  EXPECT_EQ(r.checks[0].line, 12) << "checks remember their line for messages";
  EXPECT_EQ(r.checks[1].kind, CheckKind::kSpeed);
  EXPECT_TRUE(r.checks[1].requires_gpu);
  EXPECT_EQ(r.checks[1].min_speedup, 4);
  ASSERT_TRUE(r.checks[1].partial_from.has_value());
  EXPECT_EQ(*r.checks[1].partial_from, 2);
  EXPECT_EQ(r.checks[2].kind, CheckKind::kMemory);
  EXPECT_TRUE(r.checks[2].hidden);
  ASSERT_TRUE(r.checks[2].max_ratio.has_value());
  EXPECT_EQ(*r.checks[2].max_ratio, 0.5);
  EXPECT_FALSE(r.checks[2].max_value.has_value());
  EXPECT_EQ(r.max_points(), 10);
}

TEST(Rubric, TimeCapsHaveDefaultsAndMustHoldOneRun) {
  const Rubric r = parse_rubric(kValid, "rubric.yaml", "02-matmul");
  EXPECT_EQ(r.limits.check_timeout_s, Limits{}.check_timeout_s);
  EXPECT_EQ(r.limits.lab_timeout_s, Limits{}.lab_timeout_s);
  std::string text = kValid;
  text.replace(
      text.find("  repetitions: 7"), 16,
      "  repetitions: 7\n  bench_timeout_s: 20\n  check_timeout_s: 40\n  lab_timeout_s: 60");
  const Rubric capped = parse_rubric(text, "rubric.yaml", "02-matmul");
  EXPECT_EQ(capped.limits.check_timeout_s, 40);
  EXPECT_EQ(capped.limits.lab_timeout_s, 60);
  std::string e;
  text = kValid;
  text.replace(text.find("  repetitions: 7"), 16, "  repetitions: 7\n  check_timeout_s: 10");
  e = error_of(text);
  EXPECT_NE(e.find("rubric.yaml:7:"), std::string::npos) << e;
  EXPECT_NE(e.find("check_timeout_s (10) must be at least test_timeout_s and bench_timeout_s"),
            std::string::npos)
      << e;
  text = kValid;
  text.replace(text.find("  repetitions: 7"), 16,
               "  repetitions: 7\n  check_timeout_s: 400\n  lab_timeout_s: 300");
  e = error_of(text);
  EXPECT_NE(e.find("lab_timeout_s (300) must be at least check_timeout_s (400)"), std::string::npos)
      << e;
}

TEST(Rubric, MisspeltKeyNamesItsLine) {
  std::string text = kValid;
  text.replace(text.find("    points: 3"), 13, "    pionts: 3");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("rubric.yaml:18:"), std::string::npos) << e;
  EXPECT_NE(e.find("missing required field 'checks[1].points'"), std::string::npos) << e;
}

TEST(Rubric, UnknownKeyNamesItsLine) {
  std::string text = kValid;
  text.replace(text.find("    partial: true"), 17, "    partial: true\n    weight: 2");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("rubric.yaml:18:"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown field 'checks[0].weight'"), std::string::npos) << e;
}

TEST(Rubric, WrongTypeNamesItsLine) {
  std::string text = kValid;
  text.replace(text.find("points: 5"), 9, "points: five");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("rubric.yaml:14:"), std::string::npos) << e;
  EXPECT_NE(e.find("expected a number, got 'five'"), std::string::npos) << e;
}

TEST(Rubric, InvalidYamlNamesItsLine) {
  const std::string e = error_of("lab: \"01\"\ntitle: x\nstudent_files: [a.cpp\nchecks: []\n");
  EXPECT_NE(e.find("rubric.yaml:"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid YAML"), std::string::npos) << e;
}

TEST(Rubric, TodoMustNameExistingChecksAndFiles) {
  std::string text = kValid;
  text.replace(text.find("[correct, speed]"), 16, "[correct, sped]");
  EXPECT_NE(error_of(text).find("rubric.yaml:10: todos[0].checks: no check is named 'sped'"),
            std::string::npos)
      << error_of(text);
  text = kValid;
  text.replace(text.find("file: matmul.cu"), 15, "file: other.cu");
  EXPECT_NE(error_of(text).find("'other.cu' is not in student_files"), std::string::npos);
}

TEST(Rubric, MemoryCheckNeedsExactlyOneBound) {
  std::string text = kValid;
  text.replace(text.find("    max_ratio: 0.5"), 18, "    max_ratio: 0.5\n    max_value: 100");
  EXPECT_NE(error_of(text).find("either max_value, or baseline and max_ratio"), std::string::npos)
      << error_of(text);
}

TEST(Rubric, RejectsBadValues) {
  std::string text = kValid;
  text.replace(text.find("type: speed"), 11, "type: sped");
  EXPECT_NE(error_of(text).find("expected test, speed or memory, got 'sped'"), std::string::npos);
  text = kValid;
  text.replace(text.find("partial_from: 2"), 15, "partial_from: 5");
  EXPECT_NE(error_of(text).find("partial_from: must be below min_speedup"), std::string::npos);
  text = kValid;
  text.replace(text.find("requires: gpu"), 13, "requires: tpu");
  EXPECT_NE(error_of(text).find("expected cpu, cuda or gpu"), std::string::npos);
  text = kValid;
  text.replace(text.find("points: 5"), 9, "points: -1");
  EXPECT_NE(error_of(text).find("must be >= 0"), std::string::npos);
  EXPECT_NE(error_of("").find("rubric.yaml:1: the rubric is empty"), std::string::npos);
}

TEST(Rubric, ACpuSpeedCheckNeedsAFloorForVerify) {
  // Without a GPU the speedup is a CPU timing: verify holds the solution to partial_from.
  std::string text = kValid;
  text.replace(text.find("    partial_from: 2\n    requires: gpu\n"), 38, "");
  EXPECT_NE(error_of(text).find("a speed check that runs without a GPU needs partial_from"),
            std::string::npos)
      << error_of(text);
  text = kValid;
  text.replace(text.find("    partial_from: 2\n"), 20, "");
  EXPECT_EQ(error_of(text), "") << "a GPU speed check may do without a floor";
}

TEST(Rubric, CalibratedSpeedFractions) {
  std::string text = kValid;
  const std::string line = "    partial_from: 2\n";
  text.replace(text.find(line), line.size(),
               line + "    min_fraction_of_solution: 0.8\n    partial_from_fraction: 0.5\n");
  const Rubric r = parse_rubric(text, "labs/02-matmul/rubric.yaml", "02-matmul");
  ASSERT_TRUE(r.checks[1].min_fraction_of_solution.has_value());
  EXPECT_EQ(*r.checks[1].min_fraction_of_solution, 0.8);
  EXPECT_EQ(*r.checks[1].partial_from_fraction, 0.5);
  std::string bad = text;
  bad.replace(bad.find("partial_from_fraction: 0.5"), 26, "partial_from_fraction: 0.9");
  EXPECT_NE(error_of(bad).find("partial_from_fraction: must be below min_fraction_of_solution"),
            std::string::npos)
      << error_of(bad);
  bad = text;
  bad.replace(bad.find("    min_fraction_of_solution: 0.8\n"), 34, "");
  EXPECT_NE(error_of(bad).find("partial_from_fraction: needs min_fraction_of_solution"),
            std::string::npos)
      << error_of(bad);
}

TEST(Rubric, LabIdMustMatchItsFolder) {
  std::string text = kValid;
  text.replace(text.find("lab: \"02\""), 9, "lab: \"03\"");
  EXPECT_NE(error_of(text).find("rubric.yaml:1: lab: '03' does not match the folder 02-matmul"),
            std::string::npos)
      << error_of(text);
}

TEST(Rubric, DuplicateCheckNamesAreRejected) {
  std::string text = kValid;
  text.replace(text.find("name: speed"), 11, "name: correct");
  EXPECT_NE(error_of(text).find("two checks are named 'correct'"), std::string::npos);
}

TEST(Rubric, RequiresCpuCudaOrGpu) {
  std::string text = kValid;
  text.replace(text.find("requires: gpu"), 13, "requires: cuda");
  const Rubric r = parse_rubric(text, "rubric.yaml", "02-matmul");
  EXPECT_TRUE(r.checks[1].requires_cuda) << "cuda: needs the CUDA backend built, not a GPU";
  EXPECT_FALSE(r.checks[1].requires_gpu);
  EXPECT_FALSE(r.checks[0].requires_cuda);
}

// `requires: cuda` checks run when the configured course has the CUDA backend.
TEST(BuildCache, DetectsTheCudaBackend) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gtl-grade-cache-test";
  std::filesystem::create_directories(dir);
  auto with_cache = [&](const std::string& text) {
    std::ofstream(dir / "CMakeCache.txt") << text;
    return build_has_cuda(dir);
  };
  EXPECT_TRUE(with_cache("GTL_CUDA:STRING=AUTO\nCMAKE_CUDA_COMPILER:FILEPATH=/usr/bin/nvcc\n"));
  EXPECT_FALSE(with_cache("GTL_CUDA:STRING=OFF\nCMAKE_CUDA_COMPILER:FILEPATH=/usr/bin/nvcc\n"));
  EXPECT_FALSE(with_cache(
      "GTL_CUDA:STRING=AUTO\nCMAKE_CUDA_COMPILER:FILEPATH=CMAKE_CUDA_COMPILER-NOTFOUND\n"));
  EXPECT_FALSE(with_cache("GTL_CUDA:STRING=AUTO\n"));
  std::filesystem::remove_all(dir);
  EXPECT_FALSE(build_has_cuda(dir)) << "not configured: no CUDA";
}

TEST(Rubric, LoadsTheFixtureCourse) {
  const auto labs = load_course_rubrics(std::string(GTL_GRADER_FIXTURES) + "/course");
  ASSERT_EQ(labs.size(), 1u);
  EXPECT_EQ(labs[0].dir, "01-sum");
  EXPECT_EQ(labs[0].max_points(), 16);
}

TEST(Rubric, EveryTestCheckOfTheCourseHasAJudge) {
  // The verdict channel's key is in the test program's memory: code that runs before the listener
  // can take it and report any test passed (the fixture forge_key). What makes a stolen key
  // worthless is the judge, a program built from the course alone that re-derives the verdict
  // from the outputs the student's code produced (docs/grader.md, "Trust model"). A test check
  // without one would be scored on the channel's word alone.
  const std::filesystem::path course =
      std::filesystem::path(GTL_GRADER_FIXTURES).parent_path().parent_path().parent_path();
  const auto labs = load_course_rubrics(course);
  ASSERT_GE(labs.size(), 7u) << "the course's labs under " << course;
  for (const Rubric& lab : labs) {
    for (const Check& c : lab.checks) {
      if (c.kind != CheckKind::kTest) continue;
      EXPECT_FALSE(c.judge.empty())
          << "labs/" << lab.dir << "/rubric.yaml: the test check '" << c.name
          << "' has no judge (expected `judge: <target>`): its verdict would rest on the "
             "verdict channel alone, whose key student code can steal";
    }
  }
}

}  // namespace
}  // namespace gtl::grader
