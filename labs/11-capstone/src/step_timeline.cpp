// One step of a configuration as the step-time model prices it, drawn as a pipeline's timeline
// (capstone.h, step_timeline). Given: part of the pristine lab.
#include <algorithm>
#include <string>
#include <vector>

#include "capstone.h"
#include "gtl/distributed/timeline.h"
#include "gtl/runtime/error.h"

namespace lab11 {

namespace {

using gtl::dist::Category;
using gtl::dist::Interval;
using gtl::dist::RankTimeline;
using gtl::dist::TimelineStream;

// One pass (a forward or a backward of one micro-batch) on a stage: compute, then its TP
// collectives, then its send, one after the other.
struct Pass {
  double compute = 0, tp = 0, send = 0;
  double total() const { return compute + tp + send; }
};

// 1F1B's order on stage s of pp with m micro-batches: min(pp - s - 1, m) forwards, then one
// forward and one backward at a time, then the backwards left. +i is forward i, -(i + 1)
// backward i.
std::vector<int64_t> one_f_one_b(int s, int pp, int64_t m) {
  std::vector<int64_t> order;
  const int64_t warmup = std::min<int64_t>(pp - s - 1, m);
  int64_t f = 0, b = 0;
  while (f < warmup) order.push_back(f++);
  while (f < m) {
    order.push_back(f++);
    order.push_back(-(++b));
  }
  while (b < m) order.push_back(-(++b));
  return order;
}

void add(RankTimeline& r, TimelineStream stream, Category category, std::string name, double start,
         double duration) {
  if (duration <= 0) return;
  Interval i;
  i.stream = stream;
  i.category = category;
  i.name = std::move(name);
  i.start = start;
  i.end = start + duration;
  r.intervals.push_back(std::move(i));
}

}  // namespace

gtl::dist::Timeline step_timeline(const Config& config, const StepTime& time) {
  GTL_CHECK(config.pp >= 1 && config.accumulation >= 1,
            "step_timeline: " << describe(config) << ": pp and accumulation must be >= 1");
  const int pp = config.pp;
  const int64_t m = config.accumulation;
  const double md = static_cast<double>(m);
  const double forward_compute = config.activation_checkpointing ? 0.25 : 1.0 / 3.0;
  const double forward_tp = config.activation_checkpointing ? 1.0 / 3.0 : 0.5;
  const Pass forward{time.compute_s / md * forward_compute, time.tp_comm_s / md * forward_tp,
                     time.pp_comm_s / md / 2};
  const Pass backward{time.compute_s / md * (1 - forward_compute),
                      time.tp_comm_s / md * (1 - forward_tp), time.pp_comm_s / md / 2};

  // When each pass's output reaches the neighbour: forward_done[s][i], backward_done[s][i].
  const auto n = static_cast<std::size_t>(m);
  std::vector<std::vector<double>> forward_done(static_cast<std::size_t>(pp),
                                                std::vector<double>(n, -1));
  std::vector<std::vector<double>> backward_done = forward_done;
  std::vector<std::vector<int64_t>> order(static_cast<std::size_t>(pp));
  std::vector<std::size_t> next(static_cast<std::size_t>(pp), 0);
  std::vector<double> free_at(static_cast<std::size_t>(pp), 0);
  gtl::dist::Timeline tl;
  tl.ranks.resize(static_cast<std::size_t>(pp));
  for (int s = 0; s < pp; ++s) {
    order[static_cast<std::size_t>(s)] = one_f_one_b(s, pp, m);
    tl.names.push_back("stage " + std::to_string(s) + " (world rank " +
                       std::to_string(s * config.tp) + ")");
  }

  // Runs every stage's next pass whose input is there, until all have run: each round runs at
  // least one pass (1F1B never deadlocks), so at most 2 m pp rounds.
  std::size_t left = 2 * n * static_cast<std::size_t>(pp);
  while (left > 0) {
    bool ran = false;
    for (int s = 0; s < pp; ++s) {
      const auto su = static_cast<std::size_t>(s);
      if (next[su] == order[su].size()) continue;
      const int64_t op = order[su][next[su]];
      const bool is_forward = op >= 0;
      const auto i = static_cast<std::size_t>(is_forward ? op : -op - 1);
      double input = 0;  // when this pass's input is on the stage
      if (is_forward) {
        input = s == 0 ? 0 : forward_done[su - 1][i];
      } else {
        input = s == pp - 1 ? forward_done[su][i] : backward_done[su + 1][i];
      }
      if (input < 0) continue;  // not computed yet
      const double start = std::max(free_at[su], input);
      RankTimeline& r = tl.ranks[su];
      add(r, TimelineStream::Compute, Category::IdleWait, "idle (bubble)", free_at[su],
          start - free_at[su]);
      const Pass& p = is_forward ? forward : backward;
      const std::string what = (is_forward ? "forward " : "backward ") + std::to_string(i);
      add(r, TimelineStream::Compute, Category::Compute, what, start, p.compute);
      add(r, TimelineStream::Communication, Category::Communication, "TP collectives, " + what,
          start + p.compute, p.tp);
      add(r, TimelineStream::Communication, Category::Communication,
          (is_forward ? "send activation " : "send gradient ") + std::to_string(i),
          start + p.compute + p.tp, p.send);
      add(r, TimelineStream::Compute, Category::IdleWait, "wait for " + what + "'s communication",
          start + p.compute, p.tp + p.send);
      free_at[su] = start + p.total();
      (is_forward ? forward_done : backward_done)[su][i] = free_at[su];
      r.compute_busy += p.compute;
      r.comm_busy += p.tp + p.send;
      ++next[su];
      --left;
      ran = true;
    }
    GTL_CHECK(ran, "step_timeline: the 1F1B order deadlocked (a bug in the given code)");
  }
  double step = 0;
  for (int s = 0; s < pp; ++s) {
    RankTimeline& r = tl.ranks[static_cast<std::size_t>(s)];
    const double at = free_at[static_cast<std::size_t>(s)];
    // Under ZeRO-2/3 part of it runs after each micro-batch's backward (S6); the model charges
    // it all the same, so it is drawn as one block here, and says so.
    const std::string zero = "ZeRO-" + std::to_string(config.zero_stage);
    add(r, TimelineStream::Communication, Category::Communication,
        config.zero_stage >= 2
            ? "DP synchronisation (" + zero + ": every micro-batch's reduce-scatter, drawn here)"
            : "DP synchronisation (" + zero + ")",
        at, time.dp_comm_s);
    add(r, TimelineStream::Compute, Category::IdleWait, "wait for the DP synchronisation", at,
        time.dp_comm_s);
    r.comm_busy += time.dp_comm_s;
    r.exposed_comm = r.comm_busy;  // nothing overlaps (S5, S6)
    r.hidden_comm_fraction = r.comm_busy > 0 ? 0 : 1;
    r.end_time = at + time.dp_comm_s;
    step = std::max(step, r.end_time);
  }
  for (RankTimeline& r : tl.ranks) {  // the core's definitions (timeline.h)
    add(r, TimelineStream::Compute, Category::IdleWait, "idle (bubble)", r.end_time,
        step - r.end_time);
    r.idle = step - r.compute_busy;
    r.bubble_fraction = step > 0 ? r.idle / step : 0;
    std::stable_sort(r.intervals.begin(), r.intervals.end(),
                     [](const Interval& a, const Interval& b) {
                       return a.stream != b.stream ? a.stream < b.stream : a.start < b.start;
                     });
  }
  return tl;
}

}  // namespace lab11
