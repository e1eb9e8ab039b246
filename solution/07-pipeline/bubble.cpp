// Lab 07, TODO 6: the bubble of a schedule, by running it on a clock: the plain pipeline (one
// stage per rank) and Megatron-LM's interleaved one (v chunks per rank; its order is the
// harness's, interleaved_schedule in src/interleaved_order.cpp).
//
// Each action starts when its stage is free and its input exists; the idle time of a stage is
// the step's length minus its work. With equal stages and free links GPipe and 1F1B both give
// (p-1)/(m+p-1): the first stage's last backward cannot start before the last forward has
// crossed all p stages and come back. The clock also answers what the formula cannot: a slow
// stage, another forward/backward ratio, a schedule of your own. Interleaving cuts each rank's
// layers into v chunks placed round-robin over the ranks: the pipeline is then v p virtual stages
// deep, but each is v times shorter, so filling and draining it takes p - 1 chunk-times instead of
// p - 1 stage-times: (p-1)/(v m + p - 1). The price: v times as many messages, and the warm-up
// holds more micro-batches.
#include <algorithm>
#include <vector>

#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

// SOLUTION(lab07) step 6: one clock for both simulators.
namespace {

// An action on the clock: the rank whose clock runs it, its (virtual) stage, its micro-batch.
struct Timed {
  bool forward = true;
  int64_t micro_batch = 0;
  int stage = 0;
  double work = 0;
};

// Every rank runs its actions in order on its own clock; forward i on stage k waits for forward i
// on k-1, backward i on k for backward i on k+1 and for forward i on k. Sweeps the ranks until no
// action can start: an action waiting for one not computed yet waits for the next sweep.
BubbleReport run_clock(const std::vector<std::vector<Timed>>& orders, int stages, int64_t m,
                       const char* who) {
  const std::size_t ranks = orders.size();
  // end[(op * m + i) * stages + k]: when stage k ends forward (op 0) or backward (1) of i; -1: not
  // yet.
  std::vector<double> end(static_cast<std::size_t>(2 * m * stages), -1.0);
  auto at = [&](bool forward, int64_t i, int k) -> double& {
    return end[static_cast<std::size_t>(((forward ? 0 : m) + i) * stages + k)];
  };
  std::vector<std::size_t> next(ranks, 0);
  std::vector<double> clock(ranks, 0.0);
  BubbleReport report;
  report.busy.assign(ranks, 0.0);
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t r = 0; r < ranks; ++r) {
      while (next[r] < orders[r].size()) {
        const Timed& a = orders[r][next[r]];
        double ready = 0.0;
        if (a.forward && a.stage > 0) ready = at(true, a.micro_batch, a.stage - 1);
        if (!a.forward) {
          const double own = at(true, a.micro_batch, a.stage);
          const double after = a.stage + 1 < stages ? at(false, a.micro_batch, a.stage + 1) : 0.0;
          ready = own < 0 || after < 0 ? -1.0 : std::max(own, after);
        }
        if (ready < 0) break;  // its input is not computed yet
        clock[r] = std::max(clock[r], ready) + a.work;
        at(a.forward, a.micro_batch, a.stage) = clock[r];
        report.busy[r] += a.work;
        ++next[r];
        moved = true;
      }
    }
  }
  for (std::size_t r = 0; r < ranks; ++r)
    GTL_CHECK(next[r] == orders[r].size(),
              who << ": the orders cannot run: rank " << r << " is stuck at action " << next[r]);
  report.step_time = *std::max_element(clock.begin(), clock.end());
  for (std::size_t r = 0; r < ranks; ++r)
    report.bubble.push_back(1.0 - report.busy[r] / report.step_time);
  return report;
}

}  // namespace

BubbleReport simulate_bubbles(const Schedule& schedule, const std::vector<double>& forward_time,
                              const std::vector<double>& backward_time) {
  const std::size_t p = schedule.size();
  GTL_CHECK(p >= 1 && forward_time.size() == p && backward_time.size() == p,
            "simulate_bubbles: " << p << " stages, " << forward_time.size() << " forward times, "
                                 << backward_time.size()
                                 << " backward times (one of each per stage)");
  int64_t m = 0;
  for (const Action& a : schedule[0]) m = std::max(m, a.micro_batch + 1);
  const std::string problem = schedule_problem(schedule, m);
  GTL_CHECK(problem.empty(), "simulate_bubbles: the schedule cannot run: " << problem);
  std::vector<std::vector<Timed>> orders(p);
  for (std::size_t s = 0; s < p; ++s) {
    for (const Action& a : schedule[s]) {
      const bool forward = a.op == Op::Forward;
      orders[s].push_back({forward, a.micro_batch, static_cast<int>(s),
                           forward ? forward_time[s] : backward_time[s]});
    }
  }
  return run_clock(orders, static_cast<int>(p), m, "simulate_bubbles");
}

BubbleReport simulate_interleaved_bubbles(const InterleavedSchedule& schedule, int chunks,
                                          double chunk_forward_time, double chunk_backward_time) {
  GTL_CHECK(!schedule.empty() && chunks >= 1, "simulate_interleaved_bubbles: no ranks or chunks");
  const int p = static_cast<int>(schedule.size());
  int64_t m = 0;
  std::vector<std::vector<Timed>> orders(schedule.size());
  for (int r = 0; r < p; ++r) {
    for (const ChunkAction& a : schedule[static_cast<std::size_t>(r)]) {
      GTL_CHECK(a.micro_batch >= 0 && a.chunk >= 0 && a.chunk < chunks,
                "simulate_interleaved_bubbles: the orders cannot run: an action of micro-batch "
                    << a.micro_batch << " on chunk " << a.chunk << " of " << chunks);
      m = std::max(m, a.micro_batch + 1);
      const bool forward = a.op == Op::Forward;
      orders[static_cast<std::size_t>(r)].push_back(
          {forward, a.micro_batch, a.chunk * p + r,
           forward ? chunk_forward_time : chunk_backward_time});
    }
  }
  return run_clock(orders, chunks * p, m, "simulate_interleaved_bubbles");
}
// END SOLUTION(lab07)

}  // namespace lab07
