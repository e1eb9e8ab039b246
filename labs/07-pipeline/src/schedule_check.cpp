// Schedules as text and their validity check (pipeline.h): the check runs the stages' orders
// against each other, as the executor would, with no times: a stage moves on while its next
// action's dependency is done; if no stage can move before all are done, the orders deadlock.
#include <sstream>

#include "pipeline.h"

namespace lab07 {

std::string to_string(const StageSchedule& actions) {
  std::ostringstream s;
  for (std::size_t k = 0; k < actions.size(); ++k) {
    s << (k ? " " : "") << (actions[k].op == Op::Forward ? 'F' : 'B') << actions[k].micro_batch;
  }
  return s.str();
}

namespace {

// Each micro-batch forward and backward exactly once on every stage.
std::string count_problem(const Schedule& schedule, int64_t m) {
  for (std::size_t s = 0; s < schedule.size(); ++s) {
    std::vector<int> forwards(static_cast<std::size_t>(m)), backwards(static_cast<std::size_t>(m));
    for (const Action& a : schedule[s]) {
      if (a.micro_batch < 0 || a.micro_batch >= m) {
        return "stage " + std::to_string(s) + " runs micro-batch " + std::to_string(a.micro_batch) +
               ", outside [0, " + std::to_string(m) + ")";
      }
      (a.op == Op::Forward ? forwards : backwards)[static_cast<std::size_t>(a.micro_batch)]++;
    }
    for (int64_t i = 0; i < m; ++i) {
      const int f = forwards[static_cast<std::size_t>(i)],
                b = backwards[static_cast<std::size_t>(i)];
      if (f != 1 || b != 1) {
        return "stage " + std::to_string(s) + " runs forward " + std::to_string(i) + " " +
               std::to_string(f) + " time(s) and backward " + std::to_string(i) + " " +
               std::to_string(b) + " time(s); expected once each (" + to_string(schedule[s]) + ")";
      }
    }
  }
  return "";
}

}  // namespace

std::string schedule_problem(const Schedule& schedule, int64_t m) {
  if (schedule.empty()) return "no stages";
  if (std::string problem = count_problem(schedule, m); !problem.empty()) return problem;
  const std::size_t p = schedule.size();
  // done[s][op][i]: stage s has finished that action.
  std::vector<std::vector<std::vector<bool>>> done(
      p, std::vector<std::vector<bool>>(2, std::vector<bool>(static_cast<std::size_t>(m))));
  std::vector<std::size_t> next(p, 0);
  auto ready = [&](std::size_t s, const Action& a) {
    const auto i = static_cast<std::size_t>(a.micro_batch);
    if (a.op == Op::Forward) return s == 0 || done[s - 1][0][i];
    return done[s][0][i] && (s + 1 == p || done[s + 1][1][i]);
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t s = 0; s < p; ++s) {
      while (next[s] < schedule[s].size() && ready(s, schedule[s][next[s]])) {
        const Action& a = schedule[s][next[s]++];
        done[s][a.op == Op::Forward ? 0 : 1][static_cast<std::size_t>(a.micro_batch)] = true;
        moved = true;
      }
    }
  }
  std::ostringstream stuck;
  for (std::size_t s = 0; s < p; ++s) {
    if (next[s] == schedule[s].size()) continue;
    const Action& a = schedule[s][next[s]];
    stuck << (stuck.tellp() > 0 ? "; " : "") << "stage " << s << " waits at " << to_string({a})
          << " (action " << next[s] << ") for "
          << (a.op == Op::Forward ? "forward on stage " + std::to_string(s - 1)
              : done[s][0][static_cast<std::size_t>(a.micro_batch)]
                  ? "backward on stage " + std::to_string(s + 1)
                  : "its own forward, which comes later in its order");
  }
  if (stuck.tellp() > 0) return "the stages' orders cannot all run (deadlock): " + stuck.str();
  return "";
}

}  // namespace lab07
