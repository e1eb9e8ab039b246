// The judge of lab 07 (docs/grader.md, "The judge"): built from the course alone (the lab's
// headers, its pristine harness src/, the tests' shared cases and orders, the core), never
// from the student's files. gtl-grade runs `lab07_judge <check>` after the check's tests; each case
// reads what those tests recorded (gtl_judge_output.h) for the inputs the grading seed drew and
// recomputes it here:
//   partition        the slowest stage of every cut, by brute force over all cuts; the bytes each
//                    stage holds from its layers' parameter counts
//   micro-batches    the exact sizes (batch / m, the larger first) and weights; the whole batch's
//                    gradient with the core's forward and backward
//   schedules        the orders the header's words give, built here (1F1B, interleaved; GPipe,
//                    given in the harness, for the bubbles)
//   executor         the harness's sequential step (bit for bit); bytes from the boundaries'
//                    sizes; send_recv pairs from the schedule; a micro-batch's context bytes from
//                    the core's forward; the reference step's timeline re-simulated from the
//                    recorded traces with the core's cost model, their FLOPs and bytes recomputed
//   bubbles          every report by this judge's own clock (a longest-path recursion over the
//                    dependencies, not the lab's sweep)
// The judge never runs an executor: the one symbol of a student file the harness refers to,
// run_stage, is a stand-in here that throws.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gtl/distributed/module_trace.h"
#include "gtl/distributed/timeline.h"
#include "gtl/distributed/trace.h"
#include "gtl/distributed/trace_text.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/runtime/error.h"
#include "gtl_judge.h"
#include "lab07_cases.h"
#include "lab07_schedules.h"
#include "pipeline.h"
#include "pipeline_training.h"

namespace lab07 {
// pipeline_training.cpp's pipeline_step calls the student's executor; the judge links no student
// file and never calls pipeline_step, so the symbol is a stand-in that refuses to run.
float run_stage(Communicator& /*comm*/, const StageStep& /*step*/) {
  throw gtl::Error("lab07_judge never runs an executor");
}
}  // namespace lab07

namespace {

using gtl::judge::Recorded;
using gtl::judge::Rejection;
using gtl::judge::show;
using namespace lab07;
namespace nn = gtl::nn;
namespace dist = gtl::dist;

std::string text(const std::vector<int64_t>& v) {
  std::ostringstream s;
  s << "{";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + "}";
}
std::string text(const std::vector<double>& v) {
  std::ostringstream s;
  s << "{";
  for (std::size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  return s.str() + "}";
}

// Rejects unless the test recorded that the call threw gtl::Error.
void expect_threw(Recorded& r, const std::string& what) {
  if (!r.next<bool>(what)) throw Rejection(r.test() + ": " + what + " did not throw gtl::Error");
}

// GoogleTest's EXPECT_FLOAT_EQ / EXPECT_DOUBLE_EQ: at most 4 units in the last place apart.
template <typename F, typename I>
bool within_4_ulps(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return false;
  auto biased = [](F x) {
    I bits;
    std::memcpy(&bits, &x, sizeof bits);
    using U = std::make_unsigned_t<I>;
    const U sign = U{1} << (sizeof(I) * 8 - 1);
    const U u = static_cast<U>(bits);
    return (u & sign) ? ~u + 1 : u | sign;
  };
  const auto x = biased(a), y = biased(b);
  return (x > y ? x - y : y - x) <= 4;
}

// ---- TODO 1: partition --------------------------------------------------------------------------

using lab07_cases::brute_force_optimum;
using lab07_cases::slowest;

// Reads a cut of `costs` into p stages and rejects it unless it is a cut reaching the optimum.
std::vector<int64_t> expect_optimal_cut(Recorded& r, const std::vector<double>& costs, int p) {
  const std::string what = "the cut of " + text(costs) + " into " + std::to_string(p) + " stages";
  const auto b = r.sequence<int64_t>(what, static_cast<std::size_t>(p) + 1);
  const auto layers = static_cast<int64_t>(costs.size());
  if (b.front() != 0 || b.back() != layers)
    throw Rejection(r.test() + ": " + what + " " + text(b) + " does not run from 0 to L");
  for (std::size_t s = 0; s + 1 < b.size(); ++s)
    if (b[s] >= b[s + 1])
      throw Rejection(r.test() + ": " + what + " " + text(b) + " has an empty stage");
  const double got = slowest(costs, b), best = brute_force_optimum(costs, p);
  if (got != best)
    throw Rejection(r.test() + ": " + what + " " + text(b) + " has a slowest stage of " +
                    show(got) + ", the judge finds a cut of " + show(best));
  return b;
}

std::string partition() {
  {
    Recorded r("Partition.SlowestStageIsTheMinimumOverAllCutsForEveryStageCount");
    for (const auto& costs : lab07_cases::fixed_partition_costs())
      for (int p = 1; p <= static_cast<int>(costs.size()); ++p) expect_optimal_cut(r, costs, p);
  }
  {
    Recorded r("Partition.SeededCostsForEveryStageCount");
    for (const auto& costs : lab07_cases::seeded_partition_costs())
      for (int p = 1; p <= static_cast<int>(costs.size()); ++p) expect_optimal_cut(r, costs, p);
  }
  {
    Recorded r("Partition.SeededLargeModels");
    for (const lab07_cases::PlantedPartition& c : lab07_cases::seeded_planted_partitions()) {
      const std::string what = "the cut of " + std::to_string(c.costs.size()) + " layers into " +
                               std::to_string(c.stages) + " stages";
      const auto b = r.sequence<int64_t>(what, static_cast<std::size_t>(c.stages) + 1);
      const auto layers = static_cast<int64_t>(c.costs.size());
      if (b.front() != 0 || b.back() != layers)
        throw Rejection(r.test() + ": " + what + " " + text(b) + " does not run from 0 to L");
      for (std::size_t s = 0; s + 1 < b.size(); ++s)
        if (b[s] >= b[s + 1])
          throw Rejection(r.test() + ": " + what + " " + text(b) + " has an empty stage");
      if (slowest(c.costs, b) != c.optimum)
        throw Rejection(r.test() + ": " + what + " " + text(b) + " has a slowest stage of " +
                        show(slowest(c.costs, b)) + ", the planted optimum is " + show(c.optimum));
    }
  }
  {
    Recorded r("Partition.OneStageTakesEveryLayerAndPEqualsLGivesOneLayerEach");
    if (r.sequence<int64_t>("p = 1", 2) != std::vector<int64_t>{0, 4})
      throw Rejection(r.test() + ": p = 1 must give {0, 4}");
    if (r.sequence<int64_t>("p = L", 5) != std::vector<int64_t>{0, 1, 2, 3, 4})
      throw Rejection(r.test() + ": p = L must give {0, 1, 2, 3, 4}");
  }
  {
    // The only optimal cuts (8 alone, the rest together), by brute force too.
    Recorded r("Partition.AHeavyLayerGetsAStageOfItsOwn");
    expect_optimal_cut(r, {1, 1, 1, 1, 8}, 2);
    expect_optimal_cut(r, {8, 1, 1, 1, 1}, 2);
  }
  {
    Recorded r("Partition.RejectsStageCountsWithAnEmptyStage");
    expect_threw(r, "4 stages of 3 layers");
    expect_threw(r, "0 stages");
  }
  {
    Recorded r("Partition.EachStageOwnsOnlyItsLayersParametersBalancedByCount");
    const std::vector<double> counts = layer_parameter_counts(lab_model());
    for (int p : {2, 3}) {
      const std::vector<int64_t> b = expect_optimal_cut(r, counts, p);
      const auto held = r.sequence<int64_t>("the bytes each stage holds", std::size_t(p));
      for (int s = 0; s < p; ++s) {
        double want = 0;  // value + gradient, float32
        for (int64_t l = b[std::size_t(s)]; l < b[std::size_t(s) + 1]; ++l)
          want += 2 * 4 * counts[static_cast<std::size_t>(l)];
        gtl::judge::expect_equal(
            static_cast<double>(held[std::size_t(s)]), want,
            r.test() + ": the bytes stage " + std::to_string(s) + " of " + text(b) + " holds");
      }
    }
  }
  return "every cut reaches the brute-force optimum, every stage holds its layers' bytes";
}

// ---- TODO 2: micro-batches ----------------------------------------------------------------------

// Reads a split of `batch` rows into m micro-batches and rejects it unless it is the header's.
void expect_split(Recorded& r, int64_t batch, int64_t m) {
  const std::string what = "the split of " + std::to_string(batch) + " rows into " +
                           std::to_string(m) + " micro-batches";
  const auto bounds = r.sequence<int64_t>(what, std::size_t(2 * m));
  int64_t begin = 0;
  for (int64_t i = 0; i < m; ++i) {
    const int64_t end = begin + batch / m + (i < batch % m ? 1 : 0);
    if (bounds[std::size_t(2 * i)] != begin || bounds[std::size_t(2 * i + 1)] != end)
      throw Rejection(r.test() + ": " + what + ": micro-batch " + std::to_string(i) + " is [" +
                      std::to_string(bounds[std::size_t(2 * i)]) + ", " +
                      std::to_string(bounds[std::size_t(2 * i + 1)]) + "), the judge computes [" +
                      std::to_string(begin) + ", " + std::to_string(end) + ")");
    begin = end;
  }
}

void expect_weight(float got, int64_t rows, int64_t batch, const std::string& what) {
  const float want = static_cast<float>(rows) / static_cast<float>(batch);
  if (!within_4_ulps<float, int32_t>(got, want))
    throw Rejection(what + ": the weight of " + std::to_string(rows) + " rows of " +
                    std::to_string(batch) + " is " + show(got) + ", the judge computes " +
                    show(want));
}

// The recorded accumulated gradient within the test's 1e-5 relative L2 of the whole batch's.
void expect_accumulated(Recorded& r, const lab07_cases::GradientCase& c) {
  const std::vector<float> full = lab07_cases::full_batch_grad(lab_batch(c.rows, c.data_seed));
  const std::string what = std::to_string(c.rows) + " rows in " + std::to_string(c.m) +
                           " micro-batches (data seed " + std::to_string(c.data_seed) + ")";
  const auto acc = r.sequence<float>("the accumulated gradient of " + what, full.size());
  double diff2 = 0, norm2 = 0;
  for (std::size_t k = 0; k < full.size(); ++k) {
    const double d = static_cast<double>(acc[k]) - full[k];
    diff2 += d * d;
    norm2 += static_cast<double>(full[k]) * full[k];
  }
  const double relative = std::sqrt(diff2 / norm2);
  if (!(relative <= 1e-5))
    throw Rejection(r.test() + ": " + what + ": the accumulated gradient is " + show(relative) +
                    " (relative L2) from the whole batch's gradient the judge computes");
}

std::string micro_batches() {
  {
    Recorded r("MicroBatches.CoverEveryRowOnceInOrderLargerOnesFirst");
    for (const auto& c : lab07_cases::fixed_splits()) expect_split(r, c.batch, c.m);
  }
  {
    Recorded r("MicroBatches.SeededBatchesAndCounts");
    for (const auto& c : lab07_cases::seeded_splits()) {
      expect_split(r, c.batch, c.m);
      const auto w = r.sequence<float>("the weights", std::size_t(c.m));
      for (int64_t i = 0; i < c.m; ++i)
        expect_weight(w[std::size_t(i)], c.batch / c.m + (i < c.batch % c.m ? 1 : 0), c.batch,
                      r.test() + ": micro-batch " + std::to_string(i) + " of a batch of " +
                          std::to_string(c.batch) + " in " + std::to_string(c.m));
    }
  }
  {
    Recorded r("MicroBatches.RejectsAnEmptyMicroBatch");
    expect_threw(r, "4 micro-batches of 3 rows");
    expect_threw(r, "0 micro-batches");
  }
  {
    Recorded r("MicroBatches.WeightsOfUnequalMicroBatches");
    expect_weight(r.next<float>("rows [0, 3)"), 3, 10, r.test());
    expect_weight(r.next<float>("rows [8, 10)"), 2, 10, r.test());
  }
  {
    Recorded r("MicroBatches.AccumulatedGradientsEqualTheWholeBatchsGradient");
    for (const auto& c : lab07_cases::fixed_gradient_cases()) expect_accumulated(r, c);
  }
  {
    Recorded r("MicroBatches.SeededAccumulatedGradient");
    expect_accumulated(r, lab07_cases::seeded_gradient_case());
  }
  return "every split exact, every weight the share of rows, every accumulated gradient the "
         "whole batch's";
}

// ---- TODO 4: the 1F1B schedule (and GPipe, the harness's, for the bubbles) ----------------------

// GPipe in the header's words.
Schedule gpipe_order(int p, int64_t m) {
  StageSchedule stage;
  for (int64_t i = 0; i < m; ++i) stage.push_back({Op::Forward, i});
  for (int64_t i = 0; i < m; ++i) stage.push_back({Op::Backward, i});
  return Schedule(static_cast<std::size_t>(p), stage);
}

// 1F1B: w_s = min(p - s - 1, m) warm-up forwards (what the header's memory bound gives), m - w_s
// pairs of forward w_s + k and backward k, the remaining w_s backwards.
Schedule one_f_one_b_order(int p, int64_t m) {
  Schedule schedule(static_cast<std::size_t>(p));
  for (int s = 0; s < p; ++s) {
    StageSchedule& a = schedule[std::size_t(s)];
    const int64_t w = std::min<int64_t>(p - s - 1, m);
    for (int64_t i = 0; i < w; ++i) a.push_back({Op::Forward, i});
    for (int64_t k = 0; k < m - w; ++k)
      a.push_back({Op::Forward, w + k}), a.push_back({Op::Backward, k});
    for (int64_t i = m - w; i < m; ++i) a.push_back({Op::Backward, i});
  }
  return schedule;
}

Schedule read_schedule(Recorded& r, const std::string& what) {
  const auto stages = r.next<std::size_t>(what + ": the number of stages");
  Schedule schedule;
  for (std::size_t s = 0; s < stages; ++s) {
    std::string line = r.line(what + ", stage " + std::to_string(s));
    if (line.rfind("actions", 0) != 0) throw Rejection(r.test() + ": " + what + " is malformed");
    schedule.push_back(testing::parse_stage(line.substr(7)));
  }
  return schedule;
}

void expect_schedule(Recorded& r, const std::string& name, int p, int64_t m, const Schedule& want) {
  const std::string what = name + " p = " + std::to_string(p) + ", m = " + std::to_string(m);
  const Schedule got = read_schedule(r, what);
  if (got.size() != want.size())
    throw Rejection(r.test() + ": " + what + " has " + std::to_string(got.size()) +
                    " stages, expected " + std::to_string(want.size()));
  for (std::size_t s = 0; s < want.size(); ++s)
    if (!(got[s] == want[s]))
      throw Rejection(r.test() + ": " + what + ", stage " + std::to_string(s) + " runs \"" +
                      to_string(got[s]) + "\", the header's order is \"" + to_string(want[s]) +
                      "\"");
  // The header's order is valid by construction; checked so that a judge bug cannot accept.
  if (const std::string problem = schedule_problem(want, m); !problem.empty())
    throw Rejection("the judge's own " + what + " is invalid: " + problem);
}

std::string one_f_one_b_schedule_check() {
  {
    Recorded r("OneFOneBSchedule.HandoutShapesHoldTheHeadersPropertiesAndLessThanGpipe");
    for (const auto& [p, m] : lab07_cases::handout_schedule_shapes())
      expect_schedule(r, "1F1B", p, m, one_f_one_b_order(p, m));
  }
  {
    Recorded r("OneFOneBSchedule.WarmUpIsTheLongestTheInFlightBoundAllows");
    for (int p = 1; p <= 4; ++p)
      for (int64_t m = 1; m <= 8; ++m) expect_schedule(r, "1F1B", p, m, one_f_one_b_order(p, m));
    expect_threw(r, "one_f_one_b_schedule(0, 4)");
    expect_threw(r, "one_f_one_b_schedule(2, 0)");
  }
  {
    Recorded r("OneFOneBSchedule.SeededShapes");
    for (const auto& [p, m] : lab07_cases::seeded_schedule_shapes(r.test()))
      expect_schedule(r, "1F1B", p, m, one_f_one_b_order(p, m));
  }
  return "every 1F1B schedule is the header's order";
}

// ---- TODO 5: the executor -----------------------------------------------------------------------

// The parameter names of stage s of `config` (the order StageResult::grads keeps them in).
std::vector<std::string> stage_parameters(const PipelineConfig& config, int s) {
  auto layers = nn::make_stage(config.model, config.boundaries[std::size_t(s)],
                               config.boundaries[std::size_t(s) + 1]);
  std::vector<std::string> names;
  for (const auto& p : layers->parameters()) names.push_back(p.name);
  std::sort(names.begin(), names.end());
  return names;
}

// Reads stage s's recorded loss and gradients (lab07_cases::record_stage) and rejects them unless
// they are the sequential step's bit for bit (the loss on the last stage, 0 elsewhere).
void expect_stage(Recorded& r, const PipelineConfig& config, int s, const StageResult& whole,
                  const std::string& where) {
  const int p = static_cast<int>(config.boundaries.size()) - 1;
  const std::string what = where + ", stage " + std::to_string(s);
  const auto loss = r.next<float>(what + ": the loss");
  const float want_loss = s == p - 1 ? whole.loss : 0.f;
  if (std::memcmp(&loss, &want_loss, sizeof loss) != 0)
    throw Rejection(r.test() + ": " + what + " returns the loss " + show(loss) +
                    ", the judge's sequential step gives " + show(want_loss));
  const std::vector<std::string> names = stage_parameters(config, s);
  const auto count = r.next<std::size_t>(what + ": the number of gradients");
  if (count != names.size())
    throw Rejection(r.test() + ": " + what + " has " + std::to_string(count) +
                    " gradients, its layers have " + std::to_string(names.size()) + " parameters");
  for (const std::string& name : names) {
    const auto got = r.next<std::string>(what + ": a parameter's name");
    if (got != name)
      throw Rejection(r.test() + ": " + what + " has a gradient of " + got + " where " + name +
                      " was expected");
    r.expect_digest(whole.grads.at(name),
                    what + ": the gradient of " + name + " (the sequential step's, bit for bit)");
  }
}

// The tests run two steps on the same layers, from stale gradients (executor_test.cpp): every
// stage's first step, then every stage's second, each the sequential step bit for bit.
void expect_steps(Recorded& r, const PipelineConfig& config, const std::string& name) {
  const int p = static_cast<int>(config.boundaries.size()) - 1;
  const StageResult whole = sequential_step(config);
  for (int step = 1; step <= 2; ++step) {
    const std::string where = name + " p = " + std::to_string(p) +
                              ", m = " + std::to_string(config.micro_batches) + ", batch " +
                              std::to_string(config.batch) + ", data seed " +
                              std::to_string(config.data_seed) + ", step " + std::to_string(step);
    for (int s = 0; s < p; ++s) expect_stage(r, config, s, whole, where);
  }
}

std::string executor_equivalence() {
  const std::vector<std::pair<int, int64_t>> shapes = {{1, 4}, {2, 4}, {3, 2}, {3, 5},
                                                       {4, 2}, {4, 4}, {5, 7}};
  {
    Recorded r("Executor.GpipeStepEqualsTheSequentialStepBitwise");
    for (const auto& [p, m] : shapes) expect_steps(r, lab07_cases::executor_config(p, m), "GPipe");
  }
  {
    Recorded r("Executor.SerialOrderStepEqualsTheSequentialStepBitwise");
    for (const auto& [p, m] : shapes)
      expect_steps(r, lab07_cases::executor_config(p, m), "serial order");
  }
  {
    Recorded r("Executor.SeededBatchStepEqualsTheSequentialStepBitwise");
    const lab07_cases::ExecutorCase c = lab07_cases::seeded_executor_case(r.test());
    expect_steps(r, c.config, "GPipe");
    expect_steps(r, c.config, "serial order");
  }
  return "every stage's loss and gradients are the sequential step's bit for bit";
}

int64_t sample_numel(const PipelineConfig& config, int64_t boundary) {
  return gtl::shape_numel(boundary_sample_shape(config.model, boundary));
}

// send_recv calls the header's rule gives stage s: its send to a neighbour, then the next
// action's receive from the same neighbour.
int64_t paired_messages(const StageSchedule& actions, int s, int p) {
  auto sends_to = [&](const Action& a) {
    const int peer = a.op == Op::Forward ? s + 1 : s - 1;
    return peer >= 0 && peer < p ? peer : -1;
  };
  auto receives_from = [&](const Action& a) {
    const int peer = a.op == Op::Forward ? s - 1 : s + 1;
    return peer >= 0 && peer < p ? peer : -1;
  };
  int64_t pairs = 0;
  for (std::size_t k = 0; k + 1 < actions.size(); ++k)
    if (sends_to(actions[k]) >= 0 && sends_to(actions[k]) == receives_from(actions[k + 1])) ++pairs;
  return pairs;
}

void expect_traffic(Recorded& r, const PipelineConfig& config) {
  const int p = static_cast<int>(config.boundaries.size()) - 1;
  const int64_t m = config.micro_batches;
  for (const bool serial : {false, true}) {
    const Schedule schedule = serial ? testing::serial_order(p, m) : gpipe_order(p, m);
    for (int s = 0; s < p; ++s) {
      const std::string what = std::string(serial ? "serial order" : "GPipe") +
                               " p = " + std::to_string(p) + ", m = " + std::to_string(m) +
                               ", batch " + std::to_string(config.batch) + ", stage " +
                               std::to_string(s);
      const int64_t in = s > 0 ? sample_numel(config, config.boundaries[std::size_t(s)]) : 0;
      const int64_t out =
          s + 1 < p ? sample_numel(config, config.boundaries[std::size_t(s) + 1]) : 0;
      const int64_t bytes = config.batch * (in + out) * 4;
      gtl::judge::expect_equal(r.next<int64_t>(what + ": bytes sent"), bytes,
                               r.test() + ": " + what + ": bytes sent");
      gtl::judge::expect_equal(r.next<int64_t>(what + ": bytes received"), bytes,
                               r.test() + ": " + what + ": bytes received");
      gtl::judge::expect_equal(r.next<int64_t>(what + ": send_recv calls"),
                               paired_messages(schedule[std::size_t(s)], s, p),
                               r.test() + ": " + what + ": send_recv calls");
    }
  }
}

std::string executor_traffic() {
  {
    Recorded r("Executor.SendsEachActivationAndGradientExactlyOncePairedWithSendRecv");
    expect_traffic(r, lab07_cases::executor_config(3, 5));
  }
  {
    Recorded r("Executor.SendsEachActivationAndGradientExactlyOnceOnASeededBatch");
    expect_traffic(r, lab07_cases::seeded_executor_case(r.test()).config);
  }
  return "every stage sent and received its rows' bytes once, paired as the rule says";
}

void expect_finished(Recorded& r, int64_t batch) {
  const PipelineConfig config = lab07_cases::executor_config(2, 4);
  if (!r.next<bool>("whether the step finished"))
    throw Rejection(r.test() +
                    ": the executor did not finish both_neighbours_send (p = 2, m = 4) under "
                    "rendezvous "
                    "sends (batch " +
                    std::to_string(batch) + ")");
  gtl::judge::expect_equal(
      r.next<int64_t>("the bytes stage 0 sent"), batch * sample_numel(config, 3) * 4,
      r.test() + ": the bytes stage 0 sent (batch " + std::to_string(batch) + ")");
}

std::string executor_deadlock_free() {
  {
    Recorded r("Executor.ABlockingExecutorDeadlocksInTheSteadyStateYoursDoesNot");
    expect_finished(r, lab07_cases::executor_config(2, 4).batch);
  }
  {
    Recorded r("Executor.ABlockingExecutorDeadlocksYoursDoesNotOnASeededBatch");
    expect_finished(r, lab07_cases::seeded_deadlock_batch());
  }
  return "the executor finished under rendezvous sends and sent every activation once";
}

// Bytes one micro-batch's forward of stage s saves for its backward, by the core's forward.
int64_t context_bytes(const PipelineConfig& config, int s, int64_t rows) {
  auto layers = nn::make_stage(config.model, config.boundaries[std::size_t(s)],
                               config.boundaries[std::size_t(s) + 1]);
  Shape shape = boundary_sample_shape(config.model, config.boundaries[std::size_t(s)]);
  shape.insert(shape.begin(), rows);
  nn::Context ctx;
  layers->forward(Tensor::zeros(shape), ctx);
  return ctx.saved_bytes();
}

// Each stage's peak under one order, derived from the allocations it recorded (from 0, the level
// when the step began), which must be the peak it reported: the figures checked below are the
// judge's own.
std::vector<int64_t> derived_peaks(Recorded& r, const std::string& order, int p) {
  const auto reported = r.sequence<int64_t>(order + "'s peaks", std::size_t(p));
  std::vector<int64_t> peaks;
  for (int s = 0; s < p; ++s) {
    const int64_t peak = r.peak_of_events(order + ", stage " + std::to_string(s));
    if (peak != reported[std::size_t(s)])
      throw Rejection(r.test() + ": " + order + ", stage " + std::to_string(s) +
                      ": the reported peak " + std::to_string(reported[std::size_t(s)]) +
                      " B is not the highest level of its recorded allocations, " +
                      std::to_string(peak) + " B");
    peaks.push_back(peak);
  }
  return peaks;
}

void expect_in_flight(Recorded& r, int p, int64_t m, int64_t rows) {
  const PipelineConfig config = lab07_cases::executor_config(p, m);
  const auto gpipe = derived_peaks(r, "GPipe", p);
  const auto serial = derived_peaks(r, "the serial order", p);
  for (int s = 1; s + 1 < p; ++s) {
    const int64_t per = context_bytes(config, s, rows);
    const std::string what = "p = " + std::to_string(p) + ", m = " + std::to_string(m) + ", " +
                             std::to_string(rows) + " rows per micro-batch, stage " +
                             std::to_string(s) + " (" + std::to_string(per) +
                             " bytes per micro-batch)";
    gtl::judge::expect_equal(gpipe[std::size_t(s)] / per, m,
                             r.test() + ": GPipe " + what + ": micro-batches in flight");
    gtl::judge::expect_equal(serial[std::size_t(s)] / per, int64_t{1},
                             r.test() + ": serial order " + what + ": micro-batches in flight");
  }
  for (int s = 1; s < p; ++s)
    if (serial[std::size_t(s)] > gpipe[std::size_t(s)])
      throw Rejection(r.test() + ": stage " + std::to_string(s) +
                      " held more under the serial order than under GPipe");
}

std::string executor_memory() {
  {
    Recorded r("Executor.HoldsMMicroBatchesUnderGpipeAndOneInTheSerialOrder");
    expect_in_flight(r, 4, 8, 3);
  }
  {
    Recorded r("Executor.HoldsMMicroBatchesWithFewerMicroBatchesThanStagesAndOddShapes");
    for (const auto& [p, m] : lab07_cases::in_flight_shapes()) expect_in_flight(r, p, m, 3);
  }
  {
    Recorded r("Executor.HoldsMMicroBatchesOnASeededBatch");
    expect_in_flight(r, 4, 8, lab07_cases::seeded_memory_rows());
  }
  return "m micro-batches in flight under GPipe, one in the serial order, by the core's context "
         "bytes";
}

// ---- the reference step's timeline --------------------------------------------------------------

// One recorded line back into an event (the core's text form, gtl/distributed/trace_text.h).
dist::TraceEvent parse_event(const std::string& line, const std::string& what) {
  std::optional<dist::TraceEvent> e = dist::parse_trace_event_line(line);
  if (!e) throw Rejection(what + ": a malformed trace event");
  return *e;
}

std::vector<std::vector<dist::TraceEvent>> read_traces(Recorded& r, int p,
                                                       const std::string& what) {
  if (r.next<std::size_t>(what + ": the number of ranks") != std::size_t(p))
    throw Rejection(r.test() + ": " + what + ": not one trace per rank");
  std::vector<std::vector<dist::TraceEvent>> traces(static_cast<std::size_t>(p));
  for (auto& events : traces) {
    const auto n = r.next<std::size_t>(what + ": a trace's length");
    for (std::size_t k = 0; k < n; ++k) events.push_back(parse_event(r.line(what), r.test()));
  }
  return traces;
}

// FLOPs of one micro-batch's forward and backward through rank s's layers of the reference
// model (kReferenceRowsPerMicroBatch rows), as the core's trace hooks count them.
double reference_stage_flops(int s) {
  const nn::ModelConfig model = reference_model();
  const std::vector<int64_t> b = reference_boundaries();
  auto layers = nn::make_stage(model, b[std::size_t(s)], b[std::size_t(s) + 1]);
  nn::ParameterBuffer buffer(*layers, gtl::Device::cpu());
  auto trace = std::make_shared<dist::Trace>();
  nn::HookHandle traced = dist::trace_modules(*layers, trace);
  Shape shape = boundary_sample_shape(model, b[std::size_t(s)]);
  shape.insert(shape.begin(), kReferenceRowsPerMicroBatch);
  nn::Context ctx;
  Tensor y = layers->forward(Tensor::zeros(shape), ctx);
  layers->backward(ctx, Tensor::ones(y.shape()));
  double flops = 0;
  for (const dist::TraceEvent& e : trace->events(dist::TraceKind::ModuleEnd))
    if (e.leaf) flops += e.flops;
  return flops;
}

std::string pipeline_timeline() {
  Recorded r("PipelineTimeline.GpipeOnTheReferenceClusterShowsTheFormulasBubble");
  const int p = 4;
  const std::vector<int64_t> b = reference_boundaries();
  std::vector<double> flops;
  for (int s = 0; s < p; ++s) flops.push_back(reference_stage_flops(s));
  for (const int64_t m : {1, 4, 8}) {
    const std::string what = "GPipe p = 4, m = " + std::to_string(m);
    const auto traces = read_traces(r, p, what);
    for (int s = 0; s < p; ++s) {
      double got_flops = 0;
      int64_t sent = 0;
      for (const dist::TraceEvent& e : traces[std::size_t(s)]) {
        if (e.kind == dist::TraceKind::ModuleEnd && e.leaf) got_flops += e.flops;
        if (e.kind == dist::TraceKind::PointToPoint) sent += e.bytes_sent;
      }
      const double want_flops = static_cast<double>(m) * flops[std::size_t(s)];
      if (got_flops != want_flops)
        throw Rejection(r.test() + ": " + what + ", rank " + std::to_string(s) + "'s trace holds " +
                        show(got_flops) + " FLOPs of its layers, m forwards and backwards are " +
                        show(want_flops));
      const int64_t in =
          s > 0 ? gtl::shape_numel(boundary_sample_shape(reference_model(), b[std::size_t(s)])) : 0;
      const int64_t out =
          s + 1 < p
              ? gtl::shape_numel(boundary_sample_shape(reference_model(), b[std::size_t(s) + 1]))
              : 0;
      gtl::judge::expect_equal(
          sent, m * kReferenceRowsPerMicroBatch * (in + out) * 4,
          r.test() + ": " + what + ", rank " + std::to_string(s) + ": bytes sent point to point");
    }
    const dist::Timeline tl = dist::simulate_timeline(traces, reference_cluster());
    const double formula = (p - 1.0) / (static_cast<double>(m) + p - 1.0);
    for (int s = 0; s < p; ++s) {
      const double bubble = tl.ranks[std::size_t(s)].bubble_fraction;
      if (!(std::fabs(bubble - formula) <= 0.01 * formula))
        throw Rejection(r.test() + ": " + what + ", rank " + std::to_string(s) +
                        ": the judge's simulation of the recorded traces gives a bubble of " +
                        show(bubble) + ", not the formula's " + show(formula) + " within 1%");
    }
  }
  return "the traces hold the reference step's work and messages, and their simulated bubble is "
         "the formula's";
}

std::string real_processes() {
  for (const auto& [p, test] :
       {std::pair<int, const char*>{1, "RealProcesses.OneProcessWithoutALauncherIsTheWholeModel"},
        {2, "RealProcesses.MpirunTwoStagesMatchTwoInProcessRanks"}}) {
    Recorded r(test);
    const PipelineConfig config = testing::mpi_config(p);
    const StageResult whole = sequential_step(config);
    for (int s = 0; s < p; ++s) {
      const auto backend = r.next<std::string>("rank " + std::to_string(s) + "'s backend");
      const std::string want = p == 1 ? "in-process" : "mpi";
      if (backend != want)
        throw Rejection(r.test() + ": rank " + std::to_string(s) + " ran on the " + backend +
                        " backend, not " + want);
      gtl::judge::expect_equal(r.next<int>("the world size"), p, r.test() + ": the world size");
      expect_stage(r, config, s, whole, std::to_string(p) + " process(es)");
    }
  }
  return "every process's loss and gradients are the sequential step's bit for bit";
}

std::string pipeline_gpu() {
  Recorded r("GpuPipeline.ThreeStagesSharingOneGpuMatchTheCpu");
  PipelineConfig config;
  config.boundaries = {0, 2, 4, 6};
  config.micro_batches = 5;
  const StageResult whole = sequential_step(config);
  for (int s = 0; s < 3; ++s) {
    const std::string what = "stage " + std::to_string(s);
    const auto loss = r.next<float>(what + ": the loss");
    if (s == 2 && !(std::fabs(loss - whole.loss) <= 1e-4 * std::fabs(whole.loss)))
      throw Rejection(r.test() + ": the GPU's loss " + show(loss) + " is not the CPU's " +
                      show(whole.loss) + " within 1e-4");
    const std::vector<std::string> names = stage_parameters(config, s);
    if (r.next<std::size_t>(what + ": the number of gradients") != names.size())
      throw Rejection(r.test() + ": " + what + " has other parameters than its layers");
    for (const std::string& name : names) {
      if (r.next<std::string>(what + ": a name") != name)
        throw Rejection(r.test() + ": " + what + ": expected the gradient of " + name);
      const std::vector<float>& want = whole.grads.at(name);
      gtl::judge::expect_close({want.begin(), want.end()}, r.sequence<float>(name, want.size()),
                               1e-3, 1e-6, r.test() + ": " + what + ", " + name);
    }
  }
  return "the GPU's gradients are the CPU's within GEMM rounding";
}

// ---- TODO 6: bubbles ----------------------------------------------------------------------------

// The judge's clock: the end of every action as a longest-path recursion over its two
// predecessors (the stage's previous action, and the forward on s-1 or the backward on s+1 of its
// micro-batch), memoised; a cycle is a schedule that cannot run.
BubbleReport judge_clock(const Schedule& schedule, const std::vector<double>& fwd,
                         const std::vector<double>& bwd) {
  const std::size_t p = schedule.size();
  std::map<std::tuple<std::size_t, bool, int64_t>, std::size_t> where;  // (stage, fwd?, i) -> k
  for (std::size_t s = 0; s < p; ++s)
    for (std::size_t k = 0; k < schedule[s].size(); ++k)
      where[{s, schedule[s][k].op == Op::Forward, schedule[s][k].micro_batch}] = k;
  std::vector<std::vector<double>> end(p);
  std::vector<std::vector<int>> state(p);  // 0 new, 1 on the path, 2 done
  for (std::size_t s = 0; s < p; ++s)
    end[s].assign(schedule[s].size(), 0), state[s].assign(schedule[s].size(), 0);
  std::function<double(std::size_t, std::size_t)> finish = [&](std::size_t s, std::size_t k) {
    if (state[s][k] == 2) return end[s][k];
    if (state[s][k] == 1) throw Rejection("the judge's clock: the schedule cannot run");
    state[s][k] = 1;
    const Action& a = schedule[s][k];
    const bool forward = a.op == Op::Forward;
    double start = k > 0 ? finish(s, k - 1) : 0.0;
    if (forward && s > 0)
      start = std::max(start, finish(s - 1, where.at({s - 1, true, a.micro_batch})));
    if (!forward && s + 1 < p)
      start = std::max(start, finish(s + 1, where.at({s + 1, false, a.micro_batch})));
    end[s][k] = start + (forward ? fwd[s] : bwd[s]);
    state[s][k] = 2;
    return end[s][k];
  };
  BubbleReport report;
  for (std::size_t s = 0; s < p; ++s) {
    double busy = 0;
    for (std::size_t k = 0; k < schedule[s].size(); ++k)
      report.step_time = std::max(report.step_time, finish(s, k)),
      busy += schedule[s][k].op == Op::Forward ? fwd[s] : bwd[s];
    report.busy.push_back(busy);
  }
  for (double busy : report.busy) report.bubble.push_back(1.0 - busy / report.step_time);
  return report;
}

// The recorded report against the judge's: step and busy exact (integer times), the bubble
// within 1e-12 (the rounding of 1 - busy / step, however the student writes it).
void expect_report(Recorded& r, const BubbleReport& want, const std::string& what) {
  const std::size_t p = want.busy.size();
  gtl::judge::expect_equal(r.next<double>(what + ": the step"), want.step_time,
                           r.test() + ": " + what + ": the step time");
  const auto busy = r.sequence<double>(what + ": busy", p);
  const auto bubble = r.sequence<double>(what + ": bubbles", p);
  if (busy != want.busy)
    throw Rejection(r.test() + ": " + what + ": busy " + text(busy) + ", the judge's clock gives " +
                    text(want.busy));
  for (std::size_t s = 0; s < p; ++s)
    if (!(std::fabs(bubble[s] - want.bubble[s]) <= 1e-12))
      throw Rejection(r.test() + ": " + what + ", stage " + std::to_string(s) + ": bubble " +
                      show(bubble[s]) + ", the judge's clock gives " + show(want.bubble[s]));
}

void expect_clocked(Recorded& r, const std::string& name, const Schedule& schedule,
                    const std::vector<double>& fwd, const std::vector<double>& bwd) {
  const std::string what = name + " p = " + std::to_string(schedule.size()) +
                           ", m = " + std::to_string(schedule[0].size() / 2) + ", forward " +
                           text(fwd) + ", backward " + text(bwd);
  expect_report(r, judge_clock(schedule, fwd, bwd), what);
}

std::string bubbles() {
  {
    Recorded r("Bubbles.UnitCostsGiveTheFormula");
    for (const auto& [p, m] : lab07_cases::handout_schedule_shapes()) {
      const std::vector<double> one(std::size_t(p), 1.0);
      expect_clocked(r, "GPipe", gpipe_order(p, m), one, one);
    }
    expect_clocked(r, "both_neighbours_send", testing::both_neighbours_send(), {1, 1}, {1, 1});
  }
  {
    Recorded r("Bubbles.BackwardTwiceAsLongAsForwardKeepsTheFraction");
    for (const auto& [p, m] :
         std::vector<std::pair<int, int64_t>>{{2, 4}, {3, 5}, {4, 2}, {4, 8}}) {
      const std::vector<double> f(std::size_t(p), 1.0), b(std::size_t(p), 2.0);
      expect_clocked(r, "GPipe", gpipe_order(p, m), f, b);
    }
    expect_clocked(r, "both_neighbours_send", testing::both_neighbours_send(), {1, 1}, {2, 2});
  }
  {
    Recorded r("Bubbles.SeededTimesAndShapes");
    for (const auto& c : lab07_cases::seeded_bubble_cases())
      expect_clocked(r, "GPipe", gpipe_order(c.p, c.m), c.forward, c.backward);
  }
  {
    Recorded r("Bubbles.ASlowStageSetsThePace");
    expect_clocked(r, "GPipe", gpipe_order(2, 2), {1, 2}, {2, 4});
  }
  {
    Recorded r("Bubbles.AnUnpipelinedOrderIsNotTheFormula");
    const Schedule serial = testing::parse({"F0 B0 F1 B1 F2 B2 F3 B3", "F0 B0 F1 B1 F2 B2 F3 B3"});
    expect_clocked(r, "the serial order", serial, {1, 1}, {1, 1});
  }
  {
    Recorded r("Bubbles.RejectsAScheduleThatCannotRun");
    expect_threw(r, "a schedule with a cycle");
    expect_threw(r, "one forward time for two stages");
  }
  return "every report is the judge's clock's";
}

// ---- TODO 6: interleaved 1F1B ------------------------------------------------------------------

using Interleaved = InterleavedSchedule;

// Megatron-LM's order in the header's words (the harness's, src/interleaved_order.cpp).
Interleaved interleaved_order(int p, int v, int64_t m) {
  const int64_t total = v * m, pv = int64_t{p} * v;
  Interleaved out(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& a = out[std::size_t(r)];
    const int64_t w = m == p ? total : std::min<int64_t>((p - r - 1) * 2 + (v - 1) * p, total);
    auto step = [&](int64_t k, bool forward) {
      const auto c = static_cast<int>((k % pv) / p);
      a.push_back(
          {forward ? Op::Forward : Op::Backward, (k / pv) * p + k % p, forward ? c : v - 1 - c});
    };
    for (int64_t k = 0; k < w; ++k) step(k, true);
    for (int64_t k = 0; k < total - w; ++k) step(w + k, true), step(k, false);
    for (int64_t k = total - w; k < total; ++k) step(k, false);
  }
  return out;
}

// The judge's clock over virtual stages: chunk c of rank r is stage c p + r.
BubbleReport interleaved_clock(const Interleaved& schedule, int v, double f, double b) {
  const int p = static_cast<int>(schedule.size());
  const int last = v * p - 1;
  std::map<std::tuple<bool, int64_t, int>, std::pair<int, std::size_t>> where;
  for (int r = 0; r < p; ++r)
    for (std::size_t k = 0; k < schedule[std::size_t(r)].size(); ++k) {
      const ChunkAction& a = schedule[std::size_t(r)][k];
      where[{a.op == Op::Forward, a.micro_batch, a.chunk * p + r}] = {r, k};
    }
  std::map<std::pair<int, std::size_t>, double> end;
  std::map<std::pair<int, std::size_t>, bool> open;
  std::function<double(int, std::size_t)> finish = [&](int r, std::size_t k) {
    if (const auto it = end.find({r, k}); it != end.end()) return it->second;
    if (open[{r, k}]) throw Rejection("the judge's clock: the interleaved orders cannot run");
    open[{r, k}] = true;
    const ChunkAction& a = schedule[std::size_t(r)][k];
    const bool forward = a.op == Op::Forward;
    const int stage = a.chunk * p + r;
    double start = k > 0 ? finish(r, k - 1) : 0.0;
    auto after = [&](bool fwd, int at) {
      const auto dep = where.find({fwd, a.micro_batch, at});
      if (dep == where.end()) throw Rejection("the judge's clock: a dependency never runs");
      start = std::max(start, finish(dep->second.first, dep->second.second));
    };
    if (forward && stage > 0) after(true, stage - 1);
    if (!forward && stage < last) after(false, stage + 1);
    if (!forward && stage == last) after(true, stage);
    return end[{r, k}] = start + (forward ? f : b);
  };
  BubbleReport report;
  for (int r = 0; r < p; ++r) {
    double busy = 0;
    for (std::size_t k = 0; k < schedule[std::size_t(r)].size(); ++k)
      report.step_time = std::max(report.step_time, finish(r, k)),
      busy += schedule[std::size_t(r)][k].op == Op::Forward ? f : b;
    report.busy.push_back(busy);
  }
  for (double busy : report.busy) report.bubble.push_back(1.0 - busy / report.step_time);
  return report;
}

void expect_interleaved_report(Recorded& r, int p, int v, int64_t m) {
  expect_report(r, interleaved_clock(interleaved_order(p, v, m), v, 1, 2),
                "interleaved p = " + std::to_string(p) + ", v = " + std::to_string(v) +
                    ", m = " + std::to_string(m));
}

std::string interleaved() {
  {
    Recorded r("Interleaved.BubbleIsTheFormulaWithVTimesTheMicroBatches");
    for (int p : {2, 4})
      for (int v : {1, 2, 3})
        for (int64_t m : {int64_t{p}, int64_t{2 * p}, int64_t{4 * p}})
          expect_interleaved_report(r, p, v, m);
  }
  {
    Recorded r("Interleaved.SeededRanksChunksAndMicroBatches");
    for (const auto& c : lab07_cases::seeded_interleaved_cases())
      expect_interleaved_report(r, c.p, c.v, c.m);
  }
  {
    Recorded r("Interleaved.AnUnpipelinedOrderIsSimulatedNotAssumed");
    const std::vector<ChunkAction> serial = {
        {Op::Forward, 0, 0}, {Op::Backward, 0, 0}, {Op::Forward, 1, 0}, {Op::Backward, 1, 0}};
    expect_report(r, interleaved_clock({serial, serial}, 1, 1, 2), "the serial order");
  }
  {
    Recorded r("Interleaved.OneMicroBatchThroughTwoChunksOfTwoRanks");
    const std::vector<ChunkAction> order = {
        {Op::Forward, 0, 0}, {Op::Forward, 0, 1}, {Op::Backward, 0, 1}, {Op::Backward, 0, 0}};
    expect_report(r, interleaved_clock({order, order}, 2, 1, 2), "one micro-batch, two chunks");
  }
  {
    Recorded r("Interleaved.ABubbleOfAnOrderThatCannotRunThrows");
    expect_threw(r, "an order that cannot run");
  }
  return "every interleaved bubble the judge's clock's";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(argc, argv,
                         {{"partition", partition},
                          {"micro-batches", micro_batches},
                          {"one-f-one-b-schedule", one_f_one_b_schedule_check},
                          {"executor-equivalence", executor_equivalence},
                          {"executor-traffic", executor_traffic},
                          {"executor-deadlock-free", executor_deadlock_free},
                          {"executor-memory", executor_memory},
                          {"pipeline-timeline", pipeline_timeline},
                          {"real-processes", real_processes},
                          {"bubbles", bubbles},
                          {"pipeline-gpu", pipeline_gpu},
                          {"interleaved", interleaved}});
}
