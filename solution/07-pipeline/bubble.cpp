// Lab 07, TODO 6: the bubble of a schedule, by running it on a clock.
//
// Each action starts when its stage is free and its input exists; the idle time of a stage is
// the step's length minus its work. With equal stages and free links GPipe and 1F1B both give
// (p-1)/(m+p-1): the first stage's last backward cannot start before the last forward has
// crossed all p stages and come back. The clock also answers what the formula cannot: a slow
// stage, another forward/backward ratio, a schedule of your own.
#include <algorithm>

#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

BubbleReport simulate_bubbles(const Schedule& schedule, const std::vector<double>& forward_time,
                              const std::vector<double>& backward_time) {
  const std::size_t p = schedule.size();
  GTL_CHECK(p >= 1 && forward_time.size() == p && backward_time.size() == p,
            "simulate_bubbles: " << p << " stages, " << forward_time.size() << " forward times, "
                                 << backward_time.size()
                                 << " backward times (one of each per stage)");
  // SOLUTION(lab07) step 6: end time of every action, then idle / step time per stage.
  int64_t m = 0;
  for (const Action& a : schedule[0]) m = std::max(m, a.micro_batch + 1);
  const std::string problem = schedule_problem(schedule, m);
  GTL_CHECK(problem.empty(), "simulate_bubbles: the schedule cannot run: " << problem);
  // end[s][op][i]: when stage s finishes forward (0) or backward (1) of micro-batch i; -1: not yet.
  std::vector<std::vector<std::vector<double>>> end(
      p, std::vector<std::vector<double>>(2, std::vector<double>(static_cast<std::size_t>(m), -1)));
  std::vector<std::size_t> next(p, 0);
  std::vector<double> clock(p, 0.0);
  BubbleReport report;
  report.busy.assign(p, 0.0);
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t s = 0; s < p; ++s) {
      while (next[s] < schedule[s].size()) {
        const Action& a = schedule[s][next[s]];
        const auto i = static_cast<std::size_t>(a.micro_batch);
        const bool forward = a.op == Op::Forward;
        double ready = 0.0;
        if (forward && s > 0) ready = end[s - 1][0][i];
        if (!forward && s + 1 < p) ready = end[s + 1][1][i];
        if (ready < 0) break;  // its input is not computed yet
        const double work = forward ? forward_time[s] : backward_time[s];
        clock[s] = std::max(clock[s], ready) + work;
        end[s][forward ? 0 : 1][i] = clock[s];
        report.busy[s] += work;
        ++next[s];
        moved = true;
      }
    }
  }
  report.step_time = *std::max_element(clock.begin(), clock.end());
  for (std::size_t s = 0; s < p; ++s)
    report.bubble.push_back(1.0 - report.busy[s] / report.step_time);
  return report;
  // END SOLUTION(lab07)
}

}  // namespace lab07
