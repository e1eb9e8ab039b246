// Lab 07, TODO 7: the bubble of interleaved 1F1B (its order, Megatron-LM's convention, is the
// harness's: interleaved_schedule in src/interleaved_order.cpp).
//
// Cut each rank's layers into v chunks placed round-robin over the ranks: the pipeline is then
// v p virtual stages deep, but each is v times shorter, so filling and draining it (the bubble)
// takes p - 1 chunk-times instead of p - 1 stage-times: (p-1)/(v m + p - 1). The price: v times
// as many messages, and the warm-up holds more micro-batches.
#include <algorithm>
#include <vector>

#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

BubbleReport simulate_interleaved_bubbles(const InterleavedSchedule& schedule, int chunks,
                                          double chunk_forward_time, double chunk_backward_time) {
  GTL_CHECK(!schedule.empty() && chunks >= 1, "simulate_interleaved_bubbles: no ranks or chunks");
  // SOLUTION(lab07) step 7: the clock of simulate_bubbles over virtual stages.
  const int p = static_cast<int>(schedule.size());
  const int last = chunks * p - 1;  // the last virtual stage
  int64_t m = 0;
  for (const std::vector<ChunkAction>& actions : schedule) {
    for (const ChunkAction& a : actions) {
      GTL_CHECK(a.micro_batch >= 0 && a.chunk >= 0 && a.chunk < chunks,
                "simulate_interleaved_bubbles: the orders cannot run: an action of micro-batch "
                    << a.micro_batch << " on chunk " << a.chunk << " of " << chunks);
      m = std::max(m, a.micro_batch + 1);
    }
  }
  // End time of (forward?, micro-batch, virtual stage); -1: not yet.
  std::vector<double> end(static_cast<std::size_t>(2 * m * (last + 1)), -1.0);
  auto end_of = [&](bool forward, int64_t i, int stage) -> double& {
    return end[static_cast<std::size_t>(((forward ? m : 0) + i) * (last + 1) + stage)];
  };
  auto done = [&](bool forward, int64_t i, int stage, double& at) {
    at = end_of(forward, i, stage);
    return at >= 0;
  };
  std::vector<std::size_t> next(static_cast<std::size_t>(p), 0);
  std::vector<double> clock(static_cast<std::size_t>(p), 0.0);
  BubbleReport report;
  report.busy.assign(static_cast<std::size_t>(p), 0.0);
  for (bool moved = true; moved;) {
    moved = false;
    for (int r = 0; r < p; ++r) {
      const auto ur = static_cast<std::size_t>(r);
      while (next[ur] < schedule[ur].size()) {
        const ChunkAction& a = schedule[ur][next[ur]];
        const bool forward = a.op == Op::Forward;
        const int stage = a.chunk * p + r;
        double ready = 0.0;
        if (forward && stage > 0 && !done(true, a.micro_batch, stage - 1, ready)) break;
        if (!forward && stage < last && !done(false, a.micro_batch, stage + 1, ready)) break;
        if (!forward && stage == last && !done(true, a.micro_batch, stage, ready)) break;
        const double work = forward ? chunk_forward_time : chunk_backward_time;
        clock[ur] = std::max(clock[ur], ready) + work;
        end_of(forward, a.micro_batch, stage) = clock[ur];
        report.busy[ur] += work;
        ++next[ur];
        moved = true;
      }
    }
  }
  for (int r = 0; r < p; ++r) {
    GTL_CHECK(next[static_cast<std::size_t>(r)] == schedule[static_cast<std::size_t>(r)].size(),
              "simulate_interleaved_bubbles: the orders cannot run: rank "
                  << r << " is stuck at action " << next[static_cast<std::size_t>(r)]);
  }
  report.step_time = *std::max_element(clock.begin(), clock.end());
  for (int r = 0; r < p; ++r) {
    report.bubble.push_back(1.0 - report.busy[static_cast<std::size_t>(r)] / report.step_time);
  }
  return report;
  // END SOLUTION(lab07)
}

}  // namespace lab07
