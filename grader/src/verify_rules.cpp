// verify's rules for one check (verify_rules.h).
#include "verify_rules.h"

#include <algorithm>
#include <sstream>

namespace gtl::grader {

namespace {

std::string fmt(double x) {
  std::ostringstream s;
  s.precision(3);
  s << x;
  return s.str();
}

std::string check_of(const std::string& lab, const CheckResult& c) {
  return "lab " + lab + " check '" + c.name + "'";
}

}  // namespace

bool timed_on_cpu(const CheckResult& check) {
  return check.kind == CheckKind::kSpeed && !check.requires_gpu;
}

TwinVerdict verify_twins(const std::string& lab, const CheckResult& s, const CheckResult& t,
                         bool covers_todo) {
  TwinVerdict v;
  v.verdict = "ok";
  if (s.status == Status::kSkipped) {
    v.verdict = "not verified here: " + s.reason;
    v.note = check_of(lab, s) + " " + v.verdict;
    return v;
  }
  const bool short_of_full = s.score + 1e-9 < s.max_score;
  if (timed_on_cpu(s) && short_of_full && s.status == Status::kPartial) {
    // Above the floor, below the full bar: this machine is slower, not the solution wrong.
    v.verdict = "ok (CPU timing " + fmt(s.figure.value_or(0)) + "x: above the floor " +
                fmt(s.partial_from.value_or(0)) + "x, short of the full bar " +
                fmt(s.threshold.value_or(0)) + "x)";
    v.note = check_of(lab, s) + ": the solution measured " + fmt(s.figure.value_or(0)) +
             "x on this machine, short of the full bar " + fmt(s.threshold.value_or(0)) +
             "x but above the floor " + fmt(s.partial_from.value_or(0)) +
             "x that verify requires of a CPU timing (docs/grader.md, \"Timing on a CPU\")";
  } else if (short_of_full) {
    v.verdict = "SOLUTION LOSES POINTS";
    v.problem = check_of(lab, s) + ": the solution scores " + pts(s.score) + "/" +
                pts(s.max_score) + ": " + s.reason;
    if (timed_on_cpu(s))
      v.problem += " (a CPU timing: verify requires only the floor " +
                   fmt(s.partial_from.value_or(0)) + "x, and the solution is below it)";
  } else if (timed_on_cpu(s)) {
    v.verdict = "ok (CPU timing " + fmt(s.figure.value_or(0)) + "x)";
  }
  if (!v.problem.empty()) return v;
  if (covers_todo && t.status != Status::kSkipped && t.score > 0) {
    v.verdict = "CANNOT TELL STARTER FROM SOLUTION";
    v.problem = check_of(lab, s) +
                " cannot tell the starter from the solution: the starter scores " + pts(t.score) +
                "/" + pts(t.max_score) + " (" + t.reason + ")";
  } else if (!covers_todo && v.verdict == "ok") {
    v.verdict = "ok (covers no TODO)";
  }
  return v;
}

std::vector<std::string> todos_that_earn_nothing(const Rubric& lab) {
  std::vector<std::string> problems;
  for (const auto& todo : lab.todos) {
    double points = 0;
    for (const auto& c : lab.checks)
      if (std::find(todo.checks.begin(), todo.checks.end(), c.name) != todo.checks.end())
        points += c.points;
    if (points <= 0)
      problems.push_back("lab " + lab.lab + ": TODO " + todo.id +
                         " earns nothing: every check it names is worth 0 points");
  }
  return problems;
}

}  // namespace gtl::grader
