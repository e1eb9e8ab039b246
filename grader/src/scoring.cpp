// Scoring arithmetic.
#include "scoring.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iomanip>
#include <sstream>

namespace gtl::grader {
namespace {

CheckResult base(const Check& c) {
  CheckResult r;
  r.name = c.name;
  r.kind = c.kind;
  r.hidden = c.hidden;
  r.requires_gpu = c.requires_gpu;
  r.requires_cuda = c.requires_cuda;
  r.max_score = c.points;
  return r;
}

std::string fmt(double x, int precision = 3) {
  std::ostringstream s;
  s.precision(precision);
  s << x;
  return s.str();
}

// Looks up a benchmark result; sets *why when it is missing or reported an error.
const BenchStat* find_stat(const BenchRun& run, const std::string& name, std::string* why) {
  auto it = run.stats.find(name);
  if (it == run.stats.end()) {
    *why = "benchmark '" + name + "' produced no result (does its name match the program's?)";
    return nullptr;
  }
  if (it->second.error) {
    *why = "benchmark '" + name + "' reported an error: " + it->second.error_message;
    return nullptr;
  }
  return &it->second;
}

// A failure message in one line: GoogleTest starts it with "file:line", which says little to
// a student reading a table; the expectation that follows says what went wrong.
std::string one_line(const std::string& message) {
  std::string text = message;
  const auto nl = text.find('\n');
  if (nl != std::string::npos && nl > 0 && text.rfind(":", nl) != std::string::npos &&
      std::isdigit(static_cast<unsigned char>(text[nl - 1])))
    text = text.substr(nl + 1);
  std::string out;
  for (char c : text) {
    if (c == '\n' || c == '\t') c = ' ';
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  return out.size() > 160 ? out.substr(0, 157) + "..." : out;
}

}  // namespace

const char* to_string(Status status) {
  switch (status) {
    case Status::kPassed:
      return "passed";
    case Status::kPartial:
      return "partial";
    case Status::kFailed:
      return "failed";
    case Status::kSkipped:
      return "skipped";
  }
  return "?";
}

double LabResult::score() const {
  double s = 0;
  for (const auto& c : checks)
    if (c.status != Status::kSkipped) s += c.score;
  return s;
}
double LabResult::max_score() const {
  double s = 0;
  for (const auto& c : checks)
    if (c.status != Status::kSkipped) s += c.max_score;
  return s;
}
double LabResult::skipped_points() const {
  double s = 0;
  for (const auto& c : checks)
    if (c.status == Status::kSkipped) s += c.max_score;
  return s;
}
std::string LabResult::compile_problem() const {
  if (build_errors.empty() && failed_targets.empty()) return "";
  if (!built || failed_targets.empty()) return "The lab does not compile";
  std::string names;
  for (const auto& t : failed_targets) names += (names.empty() ? "" : ", ") + t;
  return names + (failed_targets.size() == 1 ? " does" : " do") +
         " not compile (only the checks that run " + (failed_targets.size() == 1 ? "it" : "them") +
         " score 0)";
}
double GradeResult::score() const {
  double s = 0;
  for (const auto& l : labs) s += l.score();
  return s;
}
double GradeResult::max_score() const {
  double s = 0;
  for (const auto& l : labs) s += l.max_score();
  return s;
}
double GradeResult::skipped_points() const {
  double s = 0;
  for (const auto& l : labs) s += l.skipped_points();
  return s;
}

std::string pts(double points) {
  std::ostringstream s;
  s << std::setprecision(4) << (std::abs(points) < 5e-5 ? 0.0 : points);
  return s.str();
}

double speed_credit(double speedup, double min_speedup, std::optional<double> partial_from) {
  if (!(speedup >= 0)) return 0;  // NaN earns nothing
  if (speedup >= min_speedup) return 1;
  if (partial_from && speedup > *partial_from)
    return (speedup - *partial_from) / (min_speedup - *partial_from);
  return 0;
}

CheckResult skipped_check(const Check& check, const std::string& reason) {
  CheckResult r = base(check);
  r.status = Status::kSkipped;
  r.reason = reason;
  return r;
}

CheckResult failed_check(const Check& check, const std::string& reason,
                         const std::string& details) {
  CheckResult r = base(check);
  r.status = Status::kFailed;
  r.reason = reason;
  r.details = details;
  return r;
}

CheckResult score_test_check(const Check& check, const GtestRun& run) {
  CheckResult r = base(check);
  if (!run.error.empty()) return failed_check(check, run.error, run.output);
  r.tests = run.tests;
  int passed = 0, skipped = 0;
  std::string first_bad, skip_reason;
  for (const auto& t : run.tests) {
    if (t.outcome == TestOutcome::kPassed) {
      ++passed;
    } else if (t.outcome == TestOutcome::kSkipped) {
      ++skipped;
      if (skip_reason.empty()) skip_reason = t.message;
    } else {
      if (first_bad.empty()) {
        // The lesson first: a reason column cut at its width must still show what to fix.
        std::string gist = failure_gist(t.message);
        if (gist.size() > 160) gist = gist.substr(0, 157) + "...";
        first_bad = gist.empty() ? t.name + " " + to_string(t.outcome)
                                 : gist + " [" + t.name + " " + to_string(t.outcome) + "]";
      }
      r.details += "--- " + t.name + " (" + to_string(t.outcome) + ")\n" + t.message + "\n";
    }
  }
  const int total = static_cast<int>(run.tests.size());
  if (!run.warning.empty()) r.details = "note: " + run.warning + "\n" + r.details;
  if (skipped > 0 && !check.requires_gpu && !check.requires_cuda) {
    // Only a missing GPU or CUDA backend may take a check out of the total, and the rubric says
    // which checks need them: a test that skips anywhere else is a test that did not pass.
    r.status = Status::kFailed;
    r.score = 0;
    r.reason = std::to_string(skipped) + " of " + std::to_string(total) +
               " tests reported skipped, but this check does not require a GPU or CUDA: a "
               "skipped test earns nothing (" +
               (skip_reason.empty() ? "no reason given" : one_line(skip_reason)) + ")";
    return r;
  }
  if (total > 0 && skipped == total) {
    // The tests themselves skipped (e.g. GTL_REQUIRE_GPU): not gradable here.
    r.status = Status::kSkipped;
    r.reason = "every test skipped: " + (skip_reason.empty() ? "no reason given" : skip_reason);
    return r;
  }
  if (skipped > 0) {
    for (const auto& t : run.tests)
      if (t.outcome == TestOutcome::kSkipped)
        r.details += "--- " + t.name + " (skipped, counts as not passed)\n" + t.message + "\n";
  }
  const int bad = total - passed;
  if (bad == 0) {
    r.status = Status::kPassed;
    r.score = check.points;
    r.reason = std::to_string(passed) + "/" + std::to_string(total) + " tests passed";
    return r;
  }
  r.score = check.partial ? check.points * passed / total : 0;
  r.status = r.score > 0 ? Status::kPartial : Status::kFailed;
  r.reason = first_bad.empty() ? std::to_string(passed) + "/" + std::to_string(total) +
                                     " tests passed; some were skipped"
                               : first_bad + "; " + std::to_string(passed) + "/" +
                                     std::to_string(total) + " tests passed";
  return r;
}

std::string heading_anchor(const std::string& heading) {
  std::string id;
  for (char c : heading) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u) || c == '-' || c == '_')
      id += static_cast<char>(std::tolower(u));
    else if (c == ' ')
      id += '-';
  }
  return id;
}

namespace {

// The anchor a handout sets for a TODO, `<a id="todo-<id>"></a>` (on the line before its heading or
// in its row of the TODO table); else that of its first heading naming "TODO <id>" as a word; ""
// when neither exists.
std::string todo_anchor(const std::string& handout, const std::string& id) {
  std::string lower_id;
  for (char c : id) lower_id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string explicit_id = "todo-" + lower_id;
  if (handout.find("<a id=\"" + explicit_id + "\">") != std::string::npos) return explicit_id;
  std::istringstream in(handout);
  const std::string name = "todo " + id;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '#') continue;
    std::string heading = line.substr(line.find_first_not_of('#'));
    heading = heading.substr(std::min(heading.size(), heading.find_first_not_of(' ')));
    std::string lower;
    for (char c : heading) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (auto at = lower.find(name); at != std::string::npos; at = lower.find(name, at + 1)) {
      const std::size_t end = at + name.size();
      const bool word_start = at == 0 || !std::isalnum(static_cast<unsigned char>(lower[at - 1]));
      const bool word_end =
          end == lower.size() || !std::isalnum(static_cast<unsigned char>(lower[end]));
      if (word_start && word_end) return heading_anchor(heading);
    }
  }
  return "";
}

}  // namespace

std::string next_step(const Rubric& rubric, const std::vector<CheckResult>& checks,
                      const std::string& handout_text) {
  auto failing = [&](const std::string& name) {
    for (const auto& c : checks)
      if (c.name == name)
        return !c.stretch() && (c.status == Status::kFailed || c.status == Status::kPartial);
    return false;
  };
  for (const Todo& todo : rubric.todos) {
    if (std::none_of(todo.checks.begin(), todo.checks.end(), failing)) continue;
    const std::string anchor = todo_anchor(handout_text, todo.id);
    const std::string file = todo.file.substr(todo.file.rfind('/') + 1);
    return "TODO " + todo.id + (file.empty() ? "" : " in " + file) + ", see labs/" + rubric.dir +
           "/README.md" + (anchor.empty() ? "" : "#" + anchor);
  }
  return "";
}

void fail_todos_with_wrong_benchmarks(const Rubric& rubric, std::vector<CheckResult>& checks) {
  auto find = [&](const std::string& name) -> CheckResult* {
    for (auto& c : checks)
      if (c.name == name) return &c;
    return nullptr;
  };
  for (const auto& todo : rubric.todos) {
    std::string wrong;  // the first benchmark of this TODO that found a wrong result
    for (const auto& name : todo.checks) {
      const CheckResult* c = find(name);
      if (c == nullptr || c->kind == CheckKind::kTest || c->status != Status::kFailed) continue;
      const auto at = c->reason.find("reported an error: ");
      if (at != std::string::npos && c->reason.find("wrong", at) != std::string::npos) {
        wrong = c->name + " (" + c->reason + ")";
        break;
      }
    }
    if (wrong.empty()) continue;
    for (const auto& name : todo.checks) {
      CheckResult* c = find(name);
      if (c == nullptr || c->kind != CheckKind::kTest || c->status == Status::kSkipped) continue;
      if (c->score == 0 && c->status == Status::kFailed) continue;
      c->score = 0;
      c->status = Status::kFailed;
      c->details = "the tests passed (" + c->reason + "), but " + c->details;
      c->reason = "the benchmark of TODO " + todo.id + " found a wrong result: " + wrong +
                  "; code must be right outside the tests too, so this check scores 0";
    }
  }
}

CheckResult score_speed_check(const Check& check, const BenchRun& run) {
  if (!run.error.empty()) return failed_check(check, run.error, run.output);
  std::string why;
  const BenchStat* fast = find_stat(run, check.benchmark, &why);
  const BenchStat* slow = fast ? find_stat(run, check.baseline, &why) : nullptr;
  if (!fast || !slow) return failed_check(check, why, run.output);
  CheckResult r = base(check);
  const bool real = check.metric == "real_time";
  const double t_fast = real ? fast->real_time_ns : fast->cpu_time_ns;
  const double t_slow = real ? slow->real_time_ns : slow->cpu_time_ns;
  const double speedup = t_fast > 0 ? t_slow / t_fast : std::nan("");
  r.figure = speedup;
  r.threshold = check.min_speedup;
  r.partial_from = check.partial_from;
  r.figure_label = "speedup";
  const double credit = speed_credit(speedup, check.min_speedup, check.partial_from);
  r.score = check.points * credit;
  r.status = credit >= 1 ? Status::kPassed : credit > 0 ? Status::kPartial : Status::kFailed;
  r.reason = "speedup " + fmt(speedup) + "x over " + check.baseline + " (" + check.metric +
             " medians " + fmt(t_slow) + " / " + fmt(t_fast) + " ns), needs " +
             fmt(check.min_speedup) + "x" +
             (check.partial_from ? " (partial credit from " + fmt(*check.partial_from) + "x)" : "");
  return r;
}

CheckResult score_memory_check(const Check& check, const BenchRun& run) {
  if (!run.error.empty()) return failed_check(check, run.error, run.output);
  std::string why;
  const BenchStat* mine = find_stat(run, check.benchmark, &why);
  const BenchStat* ref =
      mine && !check.baseline.empty() ? find_stat(run, check.baseline, &why) : nullptr;
  if (!mine || (!check.baseline.empty() && !ref)) return failed_check(check, why, run.output);
  auto counter = [&](const BenchStat& s, double* out) {
    auto it = s.counters.find(check.counter);
    if (it == s.counters.end()) {
      why = "benchmark '" + s.name + "' reports no counter '" + check.counter + "'";
      return false;
    }
    *out = it->second;
    return true;
  };
  double value = 0, ref_value = 0;
  if (!counter(*mine, &value) || (ref && !counter(*ref, &ref_value)))
    return failed_check(check, why, run.output);
  CheckResult r = base(check);
  r.higher_is_better = false;
  bool ok = false;
  if (check.max_value) {
    r.figure = value;
    r.threshold = *check.max_value;
    r.figure_label = check.counter;
    ok = value <= *check.max_value;
    r.reason = check.counter + " = " + fmt(value, 6) + ", must be <= " + fmt(*check.max_value, 6);
  } else {
    const double ratio = ref_value > 0 ? value / ref_value : (value == 0 ? 0 : std::nan(""));
    r.figure = ratio;
    r.threshold = *check.max_ratio;
    r.figure_label = check.counter + " ratio";
    ok = ratio <= *check.max_ratio;  // false for NaN
    r.reason = check.counter + " " + fmt(value, 6) + " vs " + fmt(ref_value, 6) + " of " +
               check.baseline + ": ratio " + fmt(ratio) + ", must be <= " + fmt(*check.max_ratio);
  }
  r.status = ok ? Status::kPassed : Status::kFailed;
  r.score = ok ? check.points : 0;
  return r;
}

}  // namespace gtl::grader
