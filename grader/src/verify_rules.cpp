// verify's rules for one check (verify_rules.h).
#include "verify_rules.h"

#include <algorithm>
#include <cmath>
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
  // A CPU timing that produced a figure: how far it falls short says more about the machine (its
  // load, its malloc, its BLAS) than about the code, so it never fails verify. A timing that
  // produced no figure (the benchmark failed, or gave NaN) fails it as any broken check does.
  const bool cpu_figure = timed_on_cpu(s) && s.figure && std::isfinite(*s.figure) && *s.figure > 0;
  const std::string figure = fmt(s.figure.value_or(0)) + "x";
  const std::string floor = fmt(s.partial_from.value_or(0)) + "x";
  const std::string bar = fmt(s.threshold.value_or(0)) + "x";
  if (cpu_figure && short_of_full && s.status == Status::kPartial) {
    v.verdict = "ok (CPU timing " + figure + ": above the floor " + floor +
                ", short of the full bar " + bar + ")";
    v.note = check_of(lab, s) + ": the solution measured " + figure +
             " on this machine, short of the full bar " + bar + " but above the floor " + floor +
             " (docs/grader.md, \"Timing on a CPU\")";
  } else if (cpu_figure && short_of_full) {
    v.verdict = "ok (CPU timing " + figure + ": below the floor " + floor + " here)";
    v.note = check_of(lab, s) + ": the solution measured " + figure +
             " on this machine, below even the floor " + floor +
             ": a busy or different machine moves a CPU timing that far, so verify reports it "
             "and does not fail on it; scripts/timing-spread.sh measures this machine's spread "
             "(docs/grader.md, \"Timing on a CPU\")";
  } else if (short_of_full) {
    v.verdict = "SOLUTION LOSES POINTS";
    v.problem = check_of(lab, s) + ": the solution scores " + pts(s.score) + "/" +
                pts(s.max_score) + ": " + s.reason;
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
