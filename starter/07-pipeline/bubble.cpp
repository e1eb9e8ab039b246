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
  // TODO(lab07) step 6: end time of every action, then idle / step time per stage.
  //   Spec (pipeline.h, 6): run the stages' orders on a clock and fill the report. Throw
  //   gtl::Error when the orders cannot run to their end.
  //   Yours to decide: in what order to compute the end times, given that a stage's next action
  //   may depend on an action of another stage that is not computed yet, and how you notice a
  //   schedule that can never finish. About 35 lines.
  return {};
  // END TODO(lab07)
}

}  // namespace lab07
