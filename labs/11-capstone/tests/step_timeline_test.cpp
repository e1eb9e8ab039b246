// Given code (capstone.h, step_timeline): the model's step drawn as 1F1B's schedule. Ungraded:
// it checks the course's drawing, on step times made up here (no TODO needed), seeded shapes.
//   StepTimelineGiven.TheScheduleTakesTheModelsStepAndBubble   the simulated schedule's step is
//       step_s and every stage idles exactly bubble_s; each stage computes compute_s and
//       communicates tp + sends + DP; nothing on a stream overlaps; 1F1B's warm-up on each stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "capstone.h"
#include "gtl/distributed/timeline.h"
#include "gtl_test_seed.h"

namespace lab11 {
namespace {

using gtl::dist::Category;
using gtl::dist::Interval;
using gtl::dist::TimelineStream;

// A step priced as TODO 2's rules do it (S5: every slot the slowest's, pp - 1 slots idle).
StepTime made_up(const Config& c, std::mt19937_64& g) {
  std::uniform_real_distribution<double> part(1e-3, 1.0);
  StepTime t;
  const double m = static_cast<double>(c.accumulation);
  t.compute_s = m * part(g);
  t.tp_comm_s = c.tp > 1 ? m * part(g) : 0;
  t.pp_comm_s = c.pp > 1 ? m * part(g) : 0;
  t.bubble_s = (c.pp - 1) * (t.compute_s + t.tp_comm_s + t.pp_comm_s) / m;
  t.dp_comm_s = c.dp > 1 ? part(g) : 0;
  t.step_s = t.compute_s + t.tp_comm_s + t.pp_comm_s + t.bubble_s + t.dp_comm_s;
  return t;
}

TEST(StepTimelineGiven, TheScheduleTakesTheModelsStepAndBubble) {
  std::mt19937_64 g = gtl::test_seed::generator("StepTimelineGiven");
  using gtl::test_seed::draw;
  for (int trial = 0; trial < 40; ++trial) {
    Config c;
    c.pp = static_cast<int>(draw(g, 1, 8));
    c.tp = static_cast<int>(1 << draw(g, 0, 3));
    c.dp = static_cast<int>(draw(g, 1, 4));
    c.accumulation = draw(g, 1, 20);
    c.activation_checkpointing = draw(g, 0, 1) == 1;
    const StepTime t = made_up(c, g);
    SCOPED_TRACE(describe(c));
    const gtl::dist::Timeline tl = step_timeline(c, t);
    ASSERT_EQ(tl.ranks.size(), static_cast<std::size_t>(c.pp));
    // A few dozen additions of positive doubles: 1e-12 of the step (step-time's bar).
    const double tol = 1e-12 * t.step_s;
    EXPECT_NEAR(tl.step_time(), t.step_s, tol) << "the schedule's step is not the model's";
    for (int s = 0; s < c.pp; ++s) {
      SCOPED_TRACE("stage " + std::to_string(s));
      const gtl::dist::RankTimeline& r = tl.ranks[static_cast<std::size_t>(s)];
      double bubble = 0, compute = 0, comm = 0;
      double stream_end[2] = {0, 0};
      int64_t forwards_before_backward = -1, forwards = 0;
      for (const Interval& i : r.intervals) {
        const int k = i.stream == TimelineStream::Compute ? 0 : 1;
        EXPECT_GE(i.start, stream_end[k] - tol) << i.name << " overlaps the stream's previous";
        stream_end[k] = i.end;
        if (i.category == Category::Compute) {
          compute += i.duration();
          if (i.name.rfind("forward", 0) == 0) ++forwards;
          if (i.name.rfind("backward", 0) == 0 && forwards_before_backward < 0) {
            forwards_before_backward = forwards;
          }
        }
        if (i.category == Category::Communication) comm += i.duration();
        if (i.name == "idle (bubble)") bubble += i.duration();
      }
      EXPECT_NEAR(bubble, t.bubble_s, tol);
      EXPECT_NEAR(compute, t.compute_s, tol);
      EXPECT_NEAR(comm, t.tp_comm_s + t.pp_comm_s + t.dp_comm_s, tol);
      EXPECT_NEAR(stream_end[0], t.step_s, tol) << "the compute stream ends with the step";
      EXPECT_EQ(forwards_before_backward, std::min<int64_t>(c.pp - s, c.accumulation))
          << "1F1B's warm-up";
    }
    EXPECT_NE(gtl::dist::to_chrome_trace(tl).find("\"forward 0\""), std::string::npos);
  }
}

}  // namespace
}  // namespace lab11
