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

// TODO(lab07) step 6: one clock for both simulators: the end time of every action, then the idle
//   fraction of every stage (rank).
//   Spec (pipeline.h, 6 and 7): simulate_bubbles runs the stages' orders, stage s with its own
//   forward and backward times; simulate_interleaved_bubbles runs an interleaved order, whose
//   v p virtual stages share the p ranks' clocks. Both throw gtl::Error when the orders cannot
//   run to their end; keep the argument checks below.
//   Yours to decide: one clock that serves both (what it must know of each action), in what order
//   to compute the end times, given that an action may wait for one of another stage not
//   computed yet, and how you notice orders that never finish. About 85 lines in all.
BubbleReport simulate_bubbles(const Schedule& schedule, const std::vector<double>& forward_time,
                              const std::vector<double>& backward_time) {
  const std::size_t p = schedule.size();
  GTL_CHECK(p >= 1 && forward_time.size() == p && backward_time.size() == p,
            "simulate_bubbles: " << p << " stages, " << forward_time.size() << " forward times, "
                                 << backward_time.size()
                                 << " backward times (one of each per stage)");
  return {};
}

BubbleReport simulate_interleaved_bubbles(const InterleavedSchedule& schedule, int chunks,
                                          double chunk_forward_time, double chunk_backward_time) {
  GTL_CHECK(!schedule.empty() && chunks >= 1, "simulate_interleaved_bubbles: no ranks or chunks");
  (void)chunk_forward_time, (void)chunk_backward_time;
  return {};
}
// END TODO(lab07)

}  // namespace lab07
