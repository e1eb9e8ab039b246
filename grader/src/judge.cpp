// Running a judge program and applying its verdict (see judge.h).
#include "judge.h"

namespace gtl::grader {

void apply_judge(CheckResult& check, const std::filesystem::path& judge, const RunLimits& limits,
                 const RunExtras& extras) {
  // A check that failed or was skipped needs no judge: its own reason says why. A passing stretch
  // check (0 points) is judged too: its "passed" is shown to the student.
  if (check.status == Status::kSkipped || check.status == Status::kFailed) return;
  const std::string name = judge.filename().string();
  std::string verdict;
  if (!std::filesystem::exists(judge)) {
    verdict = "the judge " + name + " was not built";
  } else {
    const RunResult r = run_process({judge.string(), check.name}, limits, {}, {}, extras);
    if (r.ok()) {
      check.details += "judge " + name + ": accepted the recorded outputs\n" + r.output;
      return;
    }
    const std::string first = r.output.substr(0, r.output.find('\n'));
    verdict = "the judge " + name + " (built from the course alone) rejects the outputs: " +
              (first.empty() ? r.describe(limits.timeout_s) : first);
    check.details += "judge " + name + ":\n" + r.output;
  }
  check.score = 0;
  check.status = Status::kFailed;
  check.reason = verdict + " (the tests said: " + check.reason + ")";
}

}  // namespace gtl::grader
