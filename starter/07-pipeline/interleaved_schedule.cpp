// Lab 07, TODO 7: interleaved 1F1B and its bubble.
//
// Cut each rank's layers into v chunks placed round-robin over the ranks: the pipeline is then
// v p virtual stages deep, but each is v times shorter, so filling and draining it (the bubble)
// takes p - 1 chunk-times instead of p - 1 stage-times: (p-1)/(v m + p - 1). The price: v times
// as many messages, and the warm-up holds more micro-batches.
#include <algorithm>
#include <map>
#include <tuple>

#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

InterleavedSchedule interleaved_schedule(int ranks, int chunks, int64_t m) {
  GTL_CHECK(ranks >= 1 && chunks >= 1 && m >= 1 && m % ranks == 0,
            "interleaved_schedule: need p >= 1, v >= 1 and m a multiple of p, got p "
                << ranks << ", v " << chunks << ", m " << m);
  // TODO(lab07) step 7a: Megatron-LM's order of chunks and micro-batches.
  //   Spec (pipeline.h, 7a): Megatron's conventions, given there in full: which (micro-batch,
  //   chunk) the k-th forward and the k-th backward of a rank run, and rank r's warm-up w_r
  //   (v m when m == p; otherwise the min(...) formula). The steady and cool-down phases are as
  //   in your TODO 4. The test has the table for p = 2, v = 2, m = 4. About 20 lines.
  (void)chunks;
  return InterleavedSchedule(static_cast<std::size_t>(ranks));
  // END TODO(lab07)
}

BubbleReport simulate_interleaved_bubbles(const InterleavedSchedule& schedule, int chunks,
                                          double chunk_forward_time, double chunk_backward_time) {
  GTL_CHECK(!schedule.empty() && chunks >= 1, "simulate_interleaved_bubbles: no ranks or chunks");
  // TODO(lab07) step 7b: the clock of simulate_bubbles over virtual stages.
  //   Spec (pipeline.h, 7b): a rank runs its actions in order on one clock; an action on virtual
  //   stage k = chunk * p + rank waits for its dependency on virtual stage k - 1 (forward) or
  //   k + 1 (backward; the last virtual stage: its own forward). Throw gtl::Error when the
  //   orders cannot run. About 40 lines.
  return {};
  // END TODO(lab07)
}

}  // namespace lab07
