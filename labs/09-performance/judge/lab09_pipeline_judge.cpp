// Lab 09's judge of TODO 3, the input pipeline (docs/grader.md, "The judge"): built from the course
// alone (the lab's header and harness, the tests' case header, the core), never from the student's
// files. It draws the same cases from the grading seed and recomputes what the tests recorded:
//   pipeline-order   every batch of every epoch, the data set's values in order (a digest), and no
//                    host synchronisation in next() and PipelineBatch::wait()
//   pipeline-waits   its own event-by-event model of the harness's loop (below): the steps that
//                    waited, the most batches in flight, the ticks the run took
//   pipeline-errors  the error at the batch that threw, after every batch before it
// One judge serves the CPU, emulated and GPU programs: the values are the data set's, whatever
// device carried them, and the counts are ticks of the virtual clock.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gtl_judge.h"
#include "input_pipeline.h"
#include "lab09_pipeline_cases.h"

namespace {

using gtl::judge::Recorded;
using gtl::judge::Rejection;
using lab09_pipeline_cases::PipelineCase;

struct Model {
  int64_t steps = 0, waits = 0, max_in_flight = 0, ticks = 0;
  std::vector<int64_t> waited_steps;
};

// The loop of run_pipeline with a correct pipeline: loads start in order, as soon as one of W
// workers is free and fewer than D batches are loading or loaded and not yet taken; a load of g
// ends cost(g) ticks after it starts; a step asks for its batch, waits (the clock runs on from one
// load's end to the next) until it has loaded, takes it and runs S ticks.
Model model(const PipelineCase& c) {
  struct Load {
    int64_t done;
    bool returned;
  };
  const auto cost = [&](int64_t g) {
    return c.data.costs[static_cast<size_t>(g) % c.data.costs.size()];
  };
  std::map<int64_t, Load> loads;
  int64_t now = 0, started = 0, returned = 0, consumed = 0, asked = 0;
  Model m;
  const auto settle = [&] {
    for (bool changed = true; changed;) {
      changed = false;
      for (auto& [g, l] : loads)
        if (l.done <= now && !l.returned) l.returned = true, ++returned, changed = true;
      while (started < std::min(consumed + c.depth, returned + c.workers)) {
        loads[started] = {now + cost(started), false};
        ++started;
        m.max_in_flight = std::max(m.max_in_flight, started - asked);
        changed = true;
      }
    }
  };
  const auto next_event = [&] {
    int64_t t = -1;
    for (const auto& [g, l] : loads)
      if (!l.returned && (t < 0 || l.done < t)) t = l.done;
    return t;
  };
  for (int64_t epoch = 0; epoch < c.run.epochs; ++epoch)
    for (int64_t b = 0; b < c.data.batches; ++b) {
      const int64_t g = epoch * c.data.batches + b;
      settle();
      const int64_t asked_at = now;
      while (!loads.at(g).returned) now = std::max(now, next_event()), settle();
      ++asked, ++consumed;
      if (loads.at(g).done > asked_at) ++m.waits, m.waited_steps.push_back(m.steps);
      ++m.steps;
      settle();
      const int64_t end = now + c.run.step_ticks;
      for (int64_t t = next_event(); t >= 0 && t <= end; t = next_event()) now = t, settle();
      now = end;
      settle();
    }
  m.ticks = now;
  return m;
}

std::vector<float> values(const PipelineCase& c, int64_t batches) {
  const lab09::SlowDataset dataset(c.data, std::make_shared<lab09::VirtualClock>());
  std::vector<float> all;
  for (int64_t g = 0; g < batches; ++g) {
    const std::vector<float> v = dataset.values(g);
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

int64_t devices(Recorded& r) {
  return r.next<int64_t>("the number of devices");
}

std::string order() {
  Recorded r("InputPipeline.ReturnsEveryBatchInOrderBitwiseWithoutHostSyncs");
  const int64_t n = devices(r);
  for (int64_t d = 0; d < n; ++d)
    for (const PipelineCase& c : lab09_pipeline_cases::seeded_cases("InputPipeline.Order", 4)) {
      const std::string what = lab09_pipeline_cases::describe(c);
      const int64_t steps = c.run.epochs * c.data.batches;
      gtl::judge::expect_equal(r.next<int64_t>("steps"), steps,
                               r.test() + ", " + what + ": batches returned");
      r.expect_digest(values(c, steps), what + ": the batches' values in order");
      gtl::judge::expect_equal(
          r.next<int64_t>("host syncs"), int64_t{0},
          r.test() + ", " + what + ": host synchronisations in next() and wait()");
    }
  return "every batch of every epoch in order, bit for bit, and no host synchronisation in next()";
}

void expect_counts(Recorded& r, const PipelineCase& c) {
  const Model m = model(c);
  const std::string what = r.test() + ", " + lab09_pipeline_cases::describe(c);
  gtl::judge::expect_equal(r.next<int64_t>("steps"), m.steps, what + ": steps");
  const int64_t waits = r.next<int64_t>("waits");
  const std::vector<int64_t> waited =
      r.sequence<int64_t>(what + ": the steps that waited", static_cast<size_t>(waits));
  if (waits != m.waits || waited != m.waited_steps)
    throw Rejection(what + ": " + std::to_string(waits) + " steps waited for their batch, the " +
                    "judge's model of a pipeline that loads as soon as a worker and a slot are " +
                    "free counts " + std::to_string(m.waits));
  gtl::judge::expect_equal(r.next<int64_t>("max in flight"), m.max_in_flight,
                           what + ": the most batches in flight");
  gtl::judge::expect_equal(r.next<int64_t>("ticks"), m.ticks, what + ": the ticks of the run");
}

std::string waits() {
  int64_t cases = 0;
  {
    Recorded r("InputPipeline.WorkedCasesWaitAsTheHandoutDerives");
    const int64_t n = devices(r);
    for (int64_t d = 0; d < n; ++d)
      for (const lab09_pipeline_cases::Worked& w : lab09_pipeline_cases::worked_cases())
        expect_counts(r, w.c), ++cases;
  }
  Recorded r("InputPipeline.SeededCasesWaitExactly");
  const int64_t n = devices(r);
  for (int64_t d = 0; d < n; ++d)
    for (const PipelineCase& c : lab09_pipeline_cases::seeded_cases("InputPipeline.Waits", 6))
      expect_counts(r, c), ++cases;
  return std::to_string(cases) + " runs waited, filled and took as long as the judge's model";
}

std::string errors() {
  Recorded r("InputPipeline.AnErrorReachesTheConsumerAtItsBatch");
  const PipelineCase c = lab09_pipeline_cases::error_case();
  const int64_t n = devices(r);
  for (int64_t d = 0; d < n; ++d) {
    const std::string what = lab09_pipeline_cases::describe(c);
    gtl::judge::expect_equal(r.next<int64_t>("the step that threw"), c.data.fail_at,
                             r.test() + ", " + what + ": the step whose next() threw");
    r.expect_digest(values(c, c.data.fail_at), what + ": the batches before the error");
  }
  return "the error reached next() at batch " + std::to_string(c.data.fail_at) +
         ", after every batch before it";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(
      argc, argv,
      {{"pipeline-order", order},
       {"pipeline-waits", waits},
       {"pipeline-errors", errors},
       {"pipeline-gpu", [] { return order() + "; " + waits() + "; " + errors(); }}});
}
