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
  // TODO(lab07) step 7: the clock of simulate_bubbles over virtual stages.
  //   Spec (pipeline.h, 7): every rank runs its actions in order on one clock; a chunk's action
  //   starts when its rank is free and what it waits for has ended, and lasts chunk_forward_time
  //   or chunk_backward_time. Throw gtl::Error when the orders cannot run. The report is
  //   simulate_bubbles's, per rank.
  //   Yours to decide: what each action waits for in the v p deep pipeline (the first and the
  //   last virtual stage included), and how to keep the end times when one rank runs several
  //   stages. About 50 lines.
  return {};
  // END TODO(lab07)
}

}  // namespace lab07
