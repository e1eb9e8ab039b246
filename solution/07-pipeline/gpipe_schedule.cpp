// Lab 07, TODO 3: the GPipe schedule, as data.
//
// All forwards, then all backwards: simple, and every stage holds the activations of all m
// micro-batches at the turn (the memory 1F1B saves). Its bubble is (p-1)/(m+p-1) of the step.
#include "gtl/runtime/error.h"
#include "pipeline.h"

namespace lab07 {

Schedule gpipe_schedule(int stages, int64_t m) {
  GTL_CHECK(stages >= 1 && m >= 1,
            "gpipe_schedule: need p >= 1 and m >= 1, got p " << stages << ", m " << m);
  // SOLUTION(lab07) step 3: every stage: F0 .. F(m-1), then B0 .. B(m-1).
  StageSchedule actions;
  for (int64_t i = 0; i < m; ++i) actions.push_back({Op::Forward, i});
  for (int64_t i = 0; i < m; ++i) actions.push_back({Op::Backward, i});
  return Schedule(static_cast<std::size_t>(stages), actions);
  // END SOLUTION(lab07)
}

}  // namespace lab07
