// Inputs of lab 07's seeded tests, shared by the tests and the lab's judge
// (judge/lab07_judge.cpp), and how the tests record what the student's code produced
// (gtl_judge_output.h). The judge draws the same inputs from the grading seed and recomputes the
// references itself: brute-force partition costs, exact micro-batch sizes, schedule orders from
// the header's words, bubbles by its own simulation, the harness's sequential step.
//
// Why a header: a test and the judge must draw exactly the same shapes from the same seed; each
// draw here is named after the test that uses it (gtl::test_seed::generator), so adding a draw to
// one test does not move another's shapes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtl/distributed/trace_text.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/runtime/error.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "pipeline.h"
#include "pipeline_training.h"

namespace lab07_cases {

using lab07::PipelineConfig;
using lab07::Schedule;

// Whether `f` throws gtl::Error (what the tests' EXPECT_THROW checks), for the judge.
inline bool throws_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const gtl::Error&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

// ---- TODO 1: partition ----------------------------------------------------------------------
// Layer costs: small integers (sums exact in double), zeros included, 1 to 10 layers.
inline std::vector<std::vector<double>> seeded_partition_costs() {
  std::mt19937_64 g = gtl::test_seed::generator("Partition.SeededCostsForEveryStageCount");
  std::vector<std::vector<double>> cases(4);
  for (auto& costs : cases) {
    costs.resize(static_cast<std::size_t>(gtl::test_seed::draw(g, 1, 10)));
    for (double& c : costs) c = static_cast<double>(gtl::test_seed::draw(g, 0, 20));
  }
  return cases;
}

// The fixed cases of Partition.SlowestStageIsTheMinimumOverAllCutsForEveryStageCount.
inline std::vector<std::vector<double>> fixed_partition_costs() {
  return {{1, 1, 1, 1, 1, 1},       {5, 1, 1, 1, 1, 1, 1, 1},   {1, 2, 3, 4, 5, 6, 7},
          {7, 6, 5, 4, 3, 2, 1},    {3, 3, 2, 2, 2, 2, 4, 1},   {0, 0, 5, 0, 5, 0},
          {9, 1, 1, 1, 1, 1, 1, 9}, {2, 7, 1, 8, 2, 8, 1, 8, 2}};
}

// The reference of the partition checks (the tests and the judge): the cost of a cut's slowest
// stage, and the minimum of it over every cut of L layers into p non-empty stages (p - 1
// boundaries among L - 1 places, all of them tried: at most a few hundred cuts here).
inline double slowest(const std::vector<double>& costs, const std::vector<int64_t>& b) {
  double worst = 0;
  for (std::size_t s = 0; s + 1 < b.size(); ++s) {
    double c = 0;
    for (int64_t l = b[s]; l < b[s + 1]; ++l) c += costs[static_cast<std::size_t>(l)];
    worst = std::max(worst, c);
  }
  return worst;
}

inline double brute_force_optimum(const std::vector<double>& costs, int p) {
  const auto layers = static_cast<int64_t>(costs.size());
  double best = std::numeric_limits<double>::infinity();
  std::vector<int64_t> b(static_cast<std::size_t>(p) + 1, 0);
  b.back() = layers;
  std::function<void(int)> place = [&](int k) {
    if (k == p) {
      best = std::min(best, slowest(costs, b));
      return;
    }
    for (int64_t at = b[static_cast<std::size_t>(k) - 1] + 1; at <= layers - (p - k); ++at) {
      b[static_cast<std::size_t>(k)] = at;
      place(k + 1);
    }
  };
  place(1);
  return best;
}

// Large models (40 to 60 layers, p about L / 3) whose optimum is known by construction, with no
// solver: enumerating every cut of them does not finish (C(49, 16) is about 2e12 cuts). Each is
// built around a planted cut; its slowest stage is a lower bound of every cut's, so it is the
// optimum. Even: every planted stage costs exactly T, and no cut can do better than the average
// T. Heavy: a few single layers cost H, the largest layer, and no planted stage costs more, and no
// cut can do better than its largest layer.
struct PlantedPartition {
  std::vector<double> costs;
  int stages = 1;
  double optimum = 0;
};

// n >= 1 positive sizes summing to total >= n, drawn from g.
inline std::vector<int64_t> draw_sizes(std::mt19937_64& g, int64_t total, int64_t n) {
  std::vector<int64_t> places;  // the n - 1 cuts among 1 .. total - 1: a partial shuffle
  for (int64_t i = 1; i < total; ++i) places.push_back(i);
  for (int64_t i = 0; i + 1 < n; ++i) {
    const auto j = static_cast<std::size_t>(
        gtl::test_seed::draw(g, i, static_cast<int64_t>(places.size()) - 1));
    std::swap(places[static_cast<std::size_t>(i)], places[j]);
  }
  places.resize(static_cast<std::size_t>(n - 1));
  std::sort(places.begin(), places.end());
  std::vector<int64_t> sizes;
  int64_t last = 0;
  for (int64_t at : places) sizes.push_back(at - last), last = at;
  sizes.push_back(total - last);
  return sizes;
}

// n >= 1 integer costs >= 0 summing to sum, drawn from g.
inline std::vector<double> draw_costs(std::mt19937_64& g, int64_t sum, int64_t n) {
  std::vector<double> costs;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const int64_t c = gtl::test_seed::draw(g, 0, std::min<int64_t>(sum, 2 * sum / n + 1));
    costs.push_back(static_cast<double>(c));
    sum -= c;
  }
  costs.push_back(static_cast<double>(sum));
  return costs;
}

inline std::vector<PlantedPartition> seeded_planted_partitions() {
  std::mt19937_64 g = gtl::test_seed::generator("Partition.SeededLargeModels");
  std::vector<PlantedPartition> cases;
  for (int k = 0; k < 4; ++k) {
    const bool heavy = k % 2 == 1;
    const int64_t layers = gtl::test_seed::draw(g, 40, 60);
    const int64_t p = layers / 3 + gtl::test_seed::draw(g, -2, 2);
    const int64_t top = gtl::test_seed::draw(g, 30, 60);  // T, or H
    PlantedPartition c;
    c.stages = static_cast<int>(p);
    c.optimum = static_cast<double>(top);
    // Heavy: one planted stage is the layer H alone, at a drawn place; the others cost T / 3 to
    // 2 T / 3 each, so that a greedy fill up to the average cost does not find the cut.
    const int64_t alone = heavy ? gtl::test_seed::draw(g, 0, p - 1) : -1;
    const std::vector<int64_t> sizes =
        draw_sizes(g, heavy ? layers - 1 : layers, heavy ? p - 1 : p);
    for (int64_t s = 0, next = 0; s < p; ++s) {
      if (s == alone) {
        c.costs.push_back(static_cast<double>(top));
        continue;
      }
      const int64_t n = sizes[static_cast<std::size_t>(next++)];
      const int64_t sum = heavy ? gtl::test_seed::draw(g, top / 3, 2 * top / 3) : top;
      const std::vector<double> stage = draw_costs(g, sum, n);
      c.costs.insert(c.costs.end(), stage.begin(), stage.end());
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

// ---- TODO 2: micro-batches --------------------------------------------------------------------
struct SplitCase {
  int64_t batch = 1, m = 1;
};
inline std::vector<SplitCase> fixed_splits() {
  return {{12, 4}, {10, 4}, {7, 1}, {5, 5}, {11, 3}};
}
inline std::vector<SplitCase> seeded_splits() {
  std::mt19937_64 g = gtl::test_seed::generator("MicroBatches.SeededBatchesAndCounts");
  std::vector<SplitCase> cases(4);
  for (auto& c : cases) {
    c.batch = gtl::test_seed::draw(g, 1, 1000);
    c.m = gtl::test_seed::draw(g, 1, std::min<int64_t>(c.batch, 64));
  }
  return cases;
}

// The accumulated-gradient cases: rows, micro-batches and the batch's data seed.
struct GradientCase {
  int64_t rows = 1, m = 1;
  uint64_t data_seed = 17;
};
inline std::vector<GradientCase> fixed_gradient_cases() {
  return {{12, 4, 17}, {10, 4, 17}, {7, 3, 17}, {5, 5, 17}};
}
inline GradientCase seeded_gradient_case() {
  std::mt19937_64 g = gtl::test_seed::generator("MicroBatches.SeededAccumulatedGradient");
  GradientCase c;
  c.rows = gtl::test_seed::draw(g, 2, 24);
  c.m = gtl::test_seed::draw(g, 1, c.rows);
  c.data_seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 0, 1 << 20));
  return c;
}

// The gradient of the whole batch's mean loss on the lab model, with the core (the reference the
// accumulated micro-batch gradients must equal, in the test and in the judge).
inline std::vector<float> full_batch_grad(const lab07::Batch& batch) {
  auto model = gtl::nn::make_model(lab07::lab_model());
  gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
  const gtl::nn::CrossEntropyLoss head;
  gtl::nn::Context ctx, loss_ctx;
  gtl::Tensor logits = model->forward(batch.images, ctx);
  head.forward(logits, batch.labels, loss_ctx);
  model->backward(ctx, head.backward(loss_ctx));
  return buffer.grads().to_vector();
}

// ---- TODOs 3 and 4: schedules ---------------------------------------------------------------
struct Shape2 {
  int p = 1;
  int64_t m = 1;
};
inline std::vector<Shape2> seeded_schedule_shapes(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  std::vector<Shape2> shapes(3);
  for (auto& s : shapes) {
    s.p = static_cast<int>(gtl::test_seed::draw(g, 1, 8));
    s.m = gtl::test_seed::draw(g, 1, 16);
  }
  return shapes;
}
// The (p, m) of OneFOneBSchedule.HandoutShapesHoldTheHeadersPropertiesAndLessThanGpipe: the
// handout's picture (p = 4, m = 4) and its timeline's m, fewer micro-batches than stages, and an
// odd depth.
inline std::vector<Shape2> handout_schedule_shapes() {
  return {{1, 4}, {2, 4}, {3, 5}, {4, 1}, {4, 2}, {4, 4}, {4, 8}, {5, 7}};
}

// A schedule for the judge: the number of stages, then each stage's actions as text ("F0 B0").
inline void record_schedule(gtl::judge::Outputs& out, const Schedule& schedule) {
  out.record(schedule.size());
  for (const auto& stage : schedule) out.record("actions " + lab07::to_string(stage));
}

// ---- TODO 5: the executor ----------------------------------------------------------------------
// The boundaries of executor_test.cpp's lab model in p stages (p = 5: the lab model with a third
// block, so that stages 1 to 3 are each a residual block).
inline std::vector<int64_t> executor_boundaries(int p) {
  switch (p) {
    case 5:
      return {0, 2, 3, 4, 5, 7};
    case 1:
      return {0, 6};
    case 2:
      return {0, 3, 6};
    case 3:
      return {0, 2, 4, 6};
    default:
      return {0, 2, 3, 4, 6};
  }
}
inline PipelineConfig executor_config(int p, int64_t m) {
  PipelineConfig c;
  c.boundaries = executor_boundaries(p);
  if (p == 5) c.model.blocks = 3;
  c.micro_batches = m;
  return c;
}

// A step of the executor tests on a seeded batch: a shape with p >= 2, a batch of at least m rows
// and a data seed.
struct ExecutorCase {
  int p = 2;
  int64_t m = 4;
  PipelineConfig config;
};
inline ExecutorCase seeded_executor_case(const std::string& test) {
  std::mt19937_64 g = gtl::test_seed::generator(test);
  const std::vector<Shape2> shapes = {{2, 4}, {3, 5}, {4, 2}, {4, 4}, {4, 8}};
  const Shape2 s = shapes[static_cast<std::size_t>(
      gtl::test_seed::draw(g, 0, static_cast<int64_t>(shapes.size()) - 1))];
  ExecutorCase c;
  c.p = s.p;
  c.m = s.m;
  c.config = executor_config(s.p, s.m);
  c.config.batch = gtl::test_seed::draw(g, s.m, 3 * s.m + 5);
  // Uneven micro-batches, so that a loss weight right only for equal sizes (1/m) fails this case
  // too.
  if (c.config.batch % s.m == 0) ++c.config.batch;
  c.config.data_seed = static_cast<uint64_t>(gtl::test_seed::draw(g, 0, 1 << 20));
  return c;
}

// The rows of a seeded 2-stage step (m = 4, lab07_schedules.h's both_neighbours_send) under
// rendezvous sends.
inline int64_t seeded_deadlock_batch() {
  std::mt19937_64 g =
      gtl::test_seed::generator("Executor.ABlockingExecutorDeadlocksYoursDoesNotOnASeededBatch");
  return gtl::test_seed::draw(g, 4, 40);
}

// The shapes of Executor.HoldsMMicroBatchesWithFewerMicroBatchesThanStagesAndOddShapes (3 rows
// per micro-batch).
inline std::vector<Shape2> in_flight_shapes() {
  return {{3, 2}, {5, 7}};
}

// Rows per micro-batch of the seeded memory test (p = 4, m = 8).
inline int64_t seeded_memory_rows() {
  std::mt19937_64 g = gtl::test_seed::generator("Executor.HoldsMMicroBatchesOnASeededBatch");
  return gtl::test_seed::draw(g, 2, 6);
}

// A stage's step for the judge: its loss, then each of its parameters (by name, in name order)
// with a digest of its gradient's bits.
inline void record_stage(gtl::judge::Outputs& out, const lab07::StageResult& r) {
  out.record(r.loss);
  out.record(r.grads.size());
  for (const auto& [name, grad] : r.grads) {
    out.record(name);
    out.record_digest(grad.data(), grad.size());
  }
}

// ---- TODO 5 on the reference cluster: the traces of the timeline --------------------------------
// Every rank's trace, one line per event in the core's text form (gtl/distributed/trace_text.h:
// every field the cost model reads): the judge simulates the timeline itself with the core's cost
// model and checks that the traces hold the reference step's work and messages.
inline void record_traces(gtl::judge::Outputs& out,
                          const std::vector<std::vector<gtl::dist::TraceEvent>>& traces) {
  out.record(traces.size());
  for (const auto& events : traces) {
    out.record(events.size());
    for (const gtl::dist::TraceEvent& e : events) out.record(gtl::dist::trace_event_line(e));
  }
}

// ---- TODO 6: bubbles ---------------------------------------------------------------------------
// A schedule on a clock with integer times per stage.
struct BubbleCase {
  int p = 1;
  int64_t m = 1;
  std::vector<double> forward, backward;
};
inline std::vector<BubbleCase> seeded_bubble_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("Bubbles.SeededTimesAndShapes");
  std::vector<BubbleCase> cases;
  // GPipe (the harness's) of any shape: equal stages (the formula), then stages of their own
  // speeds.
  for (int k = 0; k < 4; ++k) {
    BubbleCase c;
    c.p = static_cast<int>(gtl::test_seed::draw(g, 1, 6));
    c.m = gtl::test_seed::draw(g, 1, 12);
    const bool equal = k < 2;
    const double f = static_cast<double>(gtl::test_seed::draw(g, 1, 5));
    const double b = static_cast<double>(gtl::test_seed::draw(g, 1, 9));
    for (int s = 0; s < c.p; ++s) {
      c.forward.push_back(equal ? f : static_cast<double>(gtl::test_seed::draw(g, 1, 5)));
      c.backward.push_back(equal ? b : static_cast<double>(gtl::test_seed::draw(g, 1, 9)));
    }
    cases.push_back(c);
  }
  return cases;
}

// A bubble report for the judge.
inline void record_report(gtl::judge::Outputs& out, const lab07::BubbleReport& r) {
  out.record(r.step_time);
  out.record_all(r.busy);
  out.record_all(r.bubble);
}

// ---- TODO 6: interleaved 1F1B ------------------------------------------------------------------
struct InterleavedCase {
  int p = 2, v = 1;
  int64_t m = 2;
};
inline std::vector<InterleavedCase> seeded_interleaved_cases() {
  std::mt19937_64 g = gtl::test_seed::generator("Interleaved.SeededRanksChunksAndMicroBatches");
  std::vector<InterleavedCase> cases(2);
  for (auto& c : cases) {
    c.p = static_cast<int>(gtl::test_seed::draw(g, 2, 5));
    c.v = static_cast<int>(gtl::test_seed::draw(g, 1, 4));
    c.m = c.p * gtl::test_seed::draw(g, 1, 4);
  }
  return cases;
}

}  // namespace lab07_cases
