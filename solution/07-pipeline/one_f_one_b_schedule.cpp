// Lab 07, TODO 4: the 1F1B schedule (PipeDream-Flush), as data.
//
// Stage s starts the backward of a micro-batch as soon as it can, so it never holds more than
// p - s micro-batches' activations (GPipe: m). The bubble stays GPipe's, (p-1)/(m+p-1): the
// same work in the same dependency chain, only in another order.
#include <algorithm>

#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

Schedule one_f_one_b_schedule(int stages, int64_t m) {
  GTL_CHECK(stages >= 1 && m >= 1,
            "one_f_one_b_schedule: need p >= 1 and m >= 1, got p " << stages << ", m " << m);
  // SOLUTION(lab07) step 4: warm-up, steady one-forward-one-backward, cool-down.
  Schedule schedule(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    StageSchedule& actions = schedule[static_cast<std::size_t>(s)];
    const int64_t warmup = std::min<int64_t>(stages - s - 1, m);
    for (int64_t i = 0; i < warmup; ++i) actions.push_back({Op::Forward, i});
    for (int64_t k = 0; k < m - warmup; ++k) {
      actions.push_back({Op::Forward, warmup + k});
      actions.push_back({Op::Backward, k});
    }
    for (int64_t i = m - warmup; i < m; ++i) actions.push_back({Op::Backward, i});
  }
  return schedule;
  // END SOLUTION(lab07)
}

}  // namespace lab07
