// GPipe's order (pipeline.h, section 3): given by the harness. Its order is its definition (all
// forwards, then all backwards, each in micro-batch order), so there is nothing to decide: it is
// the baseline TODO 4's 1F1B is measured against, and an order the executor's and the bubble's
// tests run without depending on TODO 4.
#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

Schedule gpipe_schedule(int stages, int64_t m) {
  GTL_CHECK(stages >= 1 && m >= 1,
            "gpipe_schedule: need p >= 1 and m >= 1, got p " << stages << ", m " << m);
  StageSchedule actions;
  for (int64_t i = 0; i < m; ++i) actions.push_back({Op::Forward, i});
  for (int64_t i = 0; i < m; ++i) actions.push_back({Op::Backward, i});
  return Schedule(static_cast<std::size_t>(stages), actions);
}

}  // namespace lab07
