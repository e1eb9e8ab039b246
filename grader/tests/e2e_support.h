// Helpers of the grader's end-to-end tests: run gtl-grade on the fixture course
// (fixtures/course) in one private work folder per test program, and read its reports.
// GTL_GRADER_E2E_WORK names that folder: two programs must not share one (docs/grader.md).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "files.h"
#include "process.h"

namespace gtl::grader {

namespace fs = std::filesystem;

inline const fs::path kFixtures = GTL_GRADER_FIXTURES;
inline const fs::path kCourse = kFixtures / "course";
inline const fs::path kWork = fs::path(GTL_GRADER_E2E_WORK);

// `to` becomes a fresh copy of the fixture course, for a test that edits its rubric or files.
inline void copy_fixture_course(const fs::path& to) {
  fs::remove_all(to);
  fs::copy(kCourse, to, fs::copy_options::recursive);
}

struct Graded {
  RunResult run;
  nlohmann::json report;      // report.json
  nlohmann::json gradescope;  // results.json
  fs::path out;

  // The check named `name` of lab 01 in report.json.
  nlohmann::json check(const std::string& name) const {
    for (const auto& lab : report["labs"])
      for (const auto& c : lab["checks"])
        if (c["name"] == name) return c;
    ADD_FAILURE() << "no check " << name << " in " << report.dump(2).substr(0, 2000);
    return {};
  }
  double score(const std::string& name) const { return check(name)["score"].get<double>(); }
  std::string status(const std::string& name) const { return check(name)["status"]; }
  std::string reason(const std::string& name) const { return check(name)["reason"]; }
};

// Runs gtl-grade with `args` plus `course`, the work folder `work` and `env` ("NAME=value").
inline Graded gtl_grade_in(std::vector<std::string> args, const std::string& out_name,
                           const fs::path& course, const fs::path& work,
                           const std::vector<std::string>& env = {}, double limit_s = 240) {
  Graded g;
  g.out = kWork / "out" / out_name;
  fs::remove_all(g.out);
  std::vector<std::string> argv = {GTL_GRADE_EXE};
  argv.insert(argv.end(), args.begin(), args.end());
  for (const std::string& a :
       std::vector<std::string>{"--course", course.string(), "--work", work.string(), "--out",
                                g.out.string(), "--cpu-only"})
    argv.push_back(a);
  RunLimits limits;
  limits.timeout_s = limit_s;
  limits.output_bytes = 1 << 20;
  RunExtras extras;
  extras.env = env;
  g.run = run_process(argv, limits, {}, {}, extras);
  EXPECT_FALSE(g.run.timed_out) << "grading must finish within " << limit_s << " s";
  if (fs::exists(g.out / "report.json"))
    g.report = nlohmann::json::parse(read_file(g.out / "report.json"));
  if (fs::exists(g.out / "results.json"))
    g.gradescope = nlohmann::json::parse(read_file(g.out / "results.json"));
  return g;
}

// Runs gtl-grade with `args` plus the fixture course and the shared work folder.
inline Graded gtl_grade(std::vector<std::string> args, const std::string& out_name,
                        double limit_s = 240) {
  return gtl_grade_in(std::move(args), out_name, kCourse, kWork / "work", {}, limit_s);
}

inline Graded grade_submission_named(const std::string& name) {
  return gtl_grade({"grade", "--submission", (kFixtures / "submissions" / name).string()}, name);
}

}  // namespace gtl::grader
