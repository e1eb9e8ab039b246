// Every form of the results: a terminal table, the grader's own JSON, Gradescope's
// results.json, JUnit XML and a self-contained HTML page (html_report.cpp).
// Files are written to a temporary name and renamed, so a results file is never half-written
// and an earlier one is never lost to a crash in the middle of writing.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "scoring.h"

namespace gtl::grader {

std::string terminal_report(const GradeResult& result, bool colour);
nlohmann::json report_json(const GradeResult& result);
nlohmann::json gradescope_json(const GradeResult& result);
std::string junit_xml(const GradeResult& result);
std::string html_report(const GradeResult& result);

// Escapes &<>"' and drops the control characters XML 1.0 forbids.
std::string xml_escape(const std::string& text);
// Replaces bytes that are not valid UTF-8 (a program may print anything) with '?'.
std::string valid_utf8(const std::string& text);

// Failure details with repeats grouped, for the HTML report: tests whose messages are the same
// ("--- Suite.T/3 (failed)\n<message>") are shown once, naming the tests and "x N", and a failure
// repeated inside one message (the same assertion failing in a loop) is shown once with "x N".
// Order is that of first appearance; nothing else changes.
std::string group_repeated_failures(const std::string& details);

// The step the report ends with: the first lab's next_step, as "next: TODO 1a in reduce.cu,
// see labs/02-cuda-kernels/README.md#todo-1a"; "" when no lab has one.
std::string next_step_line(const GradeResult& result);

void write_atomic(const std::filesystem::path& path, const std::string& content);

// results.json (Gradescope), report.json, junit.xml and report.html in `out_dir`.
void write_reports(const GradeResult& result, const std::filesystem::path& out_dir);

}  // namespace gtl::grader
