// The judge of lab 06 (docs/grader.md, "The judge"): built from the course alone (the lab's
// headers, its pristine harness src/sharded_training.cpp, the tests' shared cases and the core),
// never from the student's files. gtl-grade runs `lab06_judge <check>` after the check's tests;
// each case reads what those tests recorded (gtl_judge_output.h) for the fixed inputs and for the
// inputs the grading seed drew (tests/lab06_cases.h), and recomputes it here:
//   shard arithmetic   padded sizes, offsets, real elements and owners from ceil(numel / N)
//   training           every rank's weights and losses bit for bit the harness's DDP run (the
//                      core's all-reduce), which each ZeRO stage must equal in deterministic mode;
//                      the real-process runs (ZeRO-1, ZeRO-2, ZeRO-3) and the resumed and
//                      consolidated checkpoints too; the GPU run's losses within GEMM rounding of
//                      them
//   memory             persistent bytes from the ZeRO formulas over the units' sizes; the peaks
//                      against the shards, the units' full buffers and DDP's activations, which
//                      the judge measures with its own DDP run
//   traffic            calls and bytes from the padded sizes (a ring moves N - 1 shards per
//                      collective)
//   orders             the hooks' held units and the collectives' order from the unit list, for
//                      every recorded step (TODO 5's record two steps on one Fsdp, each alike)
//   prefetch alone     per unit one asynchronous gather with its Work kept, 4 bytes per padded
//                      element, the initialised unit's full values
//   checkpoints        each rank's value shards cut from DDP's weights, its optimizer tensors'
//                      size; on the units TODO 6's own tests fill (lab06_cases.h's known
//                      values, a seeded base): each file's entries, the restored shards, m, v and
//                      step count, and the consolidated parameters
//   bf16 copies        the core's rounding of the initialised units' fp32 values, the bytes from
//                      (N - 1) shards of 2 bytes, the copy's bytes and the untouched fp32 shards
//   clip and skip      the core's single-process clip_grad_norm_ on the whole gradient; the skip
//                      decision from which rank's shard holds the inf (threads and processes)
//   overlap timeline   the recorded traces: their collectives in the unit list's order, their
//                      FLOPs and bytes those of one step of the reference model; then simulated
//                      here with the core's cost model (the traces themselves come from the
//                      student's process)
// The judge never runs a ZeRO stage: the student symbols the harness refers to are
// stand-ins here that throw.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "clip_processes.h"
#include "gtl/distributed/module_trace.h"
#include "gtl/distributed/timeline.h"
#include "gtl/distributed/trace.h"
#include "gtl/distributed/trace_text.h"
#include "gtl/nn/module.h"
#include "gtl/optim/grad_clip.h"
#include "gtl/runtime/error.h"
#include "gtl_judge.h"
#include "lab06_cases.h"
#include "lab06_test_util.h"
#include "sharded_training.h"

namespace lab06 {
// sharded_training.cpp builds the stage the caller picks; the judge runs only Stage::Ddp (the
// core's all-reduce), so the student's classes and checkpoint functions are stand-ins that refuse
// to run.
Zero1::Zero1(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions)
    : comm_(comm), flat_(flat) {
  throw gtl::Error("lab06_judge never runs ZeRO-1");
}
void Zero1::after_backward() {}
void Zero1::step() {}
Zero2::Zero2(Communicator& comm, gtl::nn::FlatParameter& flat, gtl::optim::AdamWOptions)
    : comm_(comm), flat_(flat) {
  throw gtl::Error("lab06_judge never runs ZeRO-2");
}
void Zero2::before_backward() {}
void Zero2::after_backward() {}
void Zero2::step() {}
Fsdp::Fsdp(Communicator& comm, gtl::nn::Module&, std::vector<Unit>& units, int prefetch)
    : comm_(comm), units_(units), prefetch_(prefetch) {
  throw gtl::Error("lab06_judge never runs FSDP");
}
std::vector<ParamRef> Fsdp::shard_params() const {
  return {};
}
void save_sharded(const std::string&, const Communicator&, const std::vector<Unit>&,
                  const gtl::optim::AdamW&) {
  throw gtl::Error("lab06_judge never saves a checkpoint");
}
void load_sharded(const std::string&, const Communicator&, std::vector<Unit>&, gtl::optim::AdamW&) {
  throw gtl::Error("lab06_judge never loads a checkpoint");
}
}  // namespace lab06

namespace {

using gtl::judge::expect_close;
using gtl::judge::expect_equal;
using gtl::judge::Recorded;
using gtl::judge::Rejection;
using gtl::judge::show;
using lab06::Stage;
using lab06::TrainConfig;
using lab06::TrainResult;

// ---- the arithmetic, written here from the handout's words --------------------------------------
int64_t shard_of(int64_t numel, int n) {
  return (numel + n - 1) / n;
}
int64_t padded_of(int64_t numel, int n) {
  return shard_of(numel, n) * n;
}
int64_t real_of(int64_t numel, int n, int r) {
  return std::clamp<int64_t>(numel - r * shard_of(numel, n), 0, shard_of(numel, n));
}

// Persistent bytes of rank r: per buffer, full values (4 per padded element) unless ZeRO-3, the
// values' shard, the gradients (full for ZeRO-1, the shard for ZeRO-2 and ZeRO-3), and m and v
// (8 bytes) per real element of the rank's shard.
int64_t persistent_bytes(Stage stage, const std::vector<int64_t>& numels, int n, int r) {
  int64_t bytes = 0;
  for (int64_t numel : numels) {
    const int64_t full = 4 * padded_of(numel, n), shard = 4 * shard_of(numel, n);
    const int64_t values = stage == Stage::Zero3 ? shard : full + shard;
    const int64_t grads = stage == Stage::Zero1 ? full : shard;
    bytes += values + grads + 8 * real_of(numel, n, r);
  }
  return bytes;
}

// The reference run: the harness's DDP on `world` in-process ranks, each with its own allocator.
std::vector<TrainResult> ddp(int world, const TrainConfig& config = {}) {
  return lab06::testing::run(world, Stage::Ddp, config);
}
TrainConfig with_steps(TrainConfig config, int64_t steps) {
  config.steps = steps;
  return config;
}

// Rank `rank`'s units of `config` as make_units builds them (the core's FlatParameter of the
// initialised model).
std::vector<std::unique_ptr<gtl::nn::FlatParameter>> flats(gtl::nn::Sequential& model, int n,
                                                           int rank) {
  std::vector<std::unique_ptr<gtl::nn::FlatParameter>> out;
  for (std::size_t i = 0; i < model.size(); ++i)
    if (model[i].num_parameters() > 0)
      out.push_back(
          std::make_unique<gtl::nn::FlatParameter>(model[i], gtl::Device::cpu(), n, rank));
  return out;
}

// Every rank's weights and losses (record_runs) against `want`, from `first_loss` on.
void expect_runs(Recorded& r, const std::vector<TrainResult>& want, const std::string& what,
                 std::size_t first_loss = 0) {
  for (std::size_t rank = 0; rank < want.size(); ++rank) {
    const std::string at = what + ", rank " + std::to_string(rank);
    r.expect_digest(want[rank].weights, at + ": the weights (DDP's, bit for bit)");
    r.expect_digest(
        std::vector<float>(want[rank].losses.begin() + long(first_loss), want[rank].losses.end()),
        at + ": the losses (DDP's, bit for bit)");
  }
}
std::string fixed(int n) {
  return "N " + std::to_string(n) + ", the lab model";
}

// The fixed test (N = 1..5, the lab model) and the seeded one of a stage's equivalence check.
std::string trains_like_ddp(const std::string& suite) {
  Recorded r(suite + ".TrainsBitForBitLikeDdpOnOneToFiveRanks");
  for (int n = 1; n <= 5; ++n) expect_runs(r, ddp(n), fixed(n));
  const std::string seeded = suite + ".TrainsBitForBitLikeDdpOnASeededModelAndData";
  Recorded s(seeded);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  expect_runs(s, ddp(c.world, c.config), lab06_cases::describe(c));
  return "every rank's weights and losses are DDP's bit for bit (N = 1..5 and a seeded run)";
}

// Persistent bytes of the fixed test (N = 1..5, the lab model) and of the seeded one.
std::string keeps(Stage stage, const std::string& fixed_test, const std::string& seeded_test) {
  const auto numels = [&](const gtl::nn::ModelConfig& model) {
    return stage == Stage::Zero3 ? lab06::testing::unit_numels(model)
                                 : std::vector<int64_t>{lab06::testing::model_numel(model)};
  };
  Recorded r(fixed_test);
  for (int n = 1; n <= 5; ++n)
    for (int rank = 0; rank < n; ++rank)
      expect_equal(
          r.next<int64_t>("persistent bytes"),
          persistent_bytes(stage, numels(lab06::lab_model()), n, rank),
          r.test() + ": " + fixed(n) + ", rank " + std::to_string(rank) + ": persistent bytes");
  Recorded s(seeded_test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded_test);
  for (int rank = 0; rank < c.world; ++rank)
    expect_equal(s.next<int64_t>("persistent bytes"),
                 persistent_bytes(stage, numels(c.config.model), c.world, rank),
                 s.test() + ": " + lab06_cases::describe(c) + ", rank " + std::to_string(rank) +
                     ": persistent bytes");
  return std::string(lab06::stage_name(stage)) + "'s persistent bytes are the formula's";
}

// One rank's traffic (record_traffic) in one step: `gathers` all-gathers and one reduce-scatter of
// every buffer, no all-reduce; a ring sends N - 1 shards per all-gather and per reduce-scatter.
void expect_traffic(Recorded& r, const std::vector<int64_t>& numels, int n, int64_t gathers,
                    const std::string& at) {
  int64_t shards = 0;
  for (int64_t numel : numels) shards += (n - 1) * 4 * shard_of(numel, n);
  const int64_t buffers = int64_t(numels.size());
  expect_equal(r.next<int64_t>("all_reduce calls"), int64_t{0}, at + ": all-reduces");
  expect_equal(r.next<int64_t>("reduce_scatter calls"), buffers, at + ": reduce-scatters");
  expect_equal(r.next<int64_t>("all_gather calls"), gathers * buffers, at + ": all-gathers");
  expect_equal(r.next<int64_t>("bytes sent"), (gathers + 1) * shards,
               at + ": bytes sent in one step");
}

// A stage's traffic: the fixed test (N = 2, 3, 5, the lab model) and the seeded one.
std::string moves(Stage stage, const std::string& suite) {
  const auto check = [&](const std::string& test, const gtl::nn::ModelConfig& model,
                         const std::vector<int>& worlds, const std::string& what) {
    Recorded r(test);
    const bool fsdp = stage == Stage::Zero3;
    const std::vector<int64_t> numels =
        fsdp ? lab06::testing::unit_numels(model)
             : std::vector<int64_t>{lab06::testing::model_numel(model)};
    for (int n : worlds)
      for (int rank = 0; rank < n; ++rank)
        expect_traffic(
            r, numels, n, fsdp ? 2 : 1,
            test + ": " + what + "N " + std::to_string(n) + ", rank " + std::to_string(rank));
  };
  const std::string name = stage == Stage::Zero3 ? suite + ".MovesOneAndAHalfTimesWhatDdpMoves"
                                                 : suite + ".MovesExactlyWhatDdpMovesPerStep";
  check(name, lab06::lab_model(), {2, 3, 5}, "the lab model, ");
  const lab06_cases::RunCase c = lab06_cases::seeded_run(name + "OnASeededModel");
  check(name + "OnASeededModel", c.config.model, {c.world}, lab06_cases::describe(c) + ", ");
  return "every rank's collectives and bytes are the sizes' (fixed and seeded models)";
}

// ---- TODO 1 ------------------------------------------------------------------------------------
std::string shard_math() {
  Recorded r("ShardMath.SeededSizesAndWorldSizes");
  for (const lab06_cases::ShardCase& c : lab06_cases::seeded_shard_cases()) {
    const std::string input = "numel " + std::to_string(c.numel) + ", N " + std::to_string(c.world);
    const std::string at = r.test() + ": " + input;
    const int64_t shard = shard_of(c.numel, c.world), padded = padded_of(c.numel, c.world);
    expect_equal(r.next<int64_t>("padded_numel"), padded, at + ": padded_numel");
    expect_equal(r.next<int64_t>("shard_size"), shard, at + ": shard_size");
    const auto offsets = r.sequence<int64_t>(input + ": the offsets", std::size_t(c.world));
    const auto reals = r.sequence<int64_t>(input + ": the real elements", std::size_t(c.world));
    for (int rank = 0; rank < c.world; ++rank) {
      const std::string of = at + ", rank " + std::to_string(rank);
      expect_equal(offsets[std::size_t(rank)], rank * shard, of + ": shard_offset");
      expect_equal(reals[std::size_t(rank)], real_of(c.numel, c.world, rank),
                   of + ": shard_real_numel");
    }
    const std::vector<int64_t> probes = lab06_cases::owner_probes(c, padded, shard);
    const auto owners = r.sequence<int64_t>(input + ": the owners", probes.size());
    for (std::size_t k = 0; k < probes.size(); ++k)
      expect_equal(owners[k], probes[k] / shard,
                   at + ": shard_owner of element " + std::to_string(probes[k]));
  }
  return "every seeded size's padding, shards, offsets and owners are right";
}

// ---- TODOs 2 and 3 -----------------------------------------------------------------------------
std::string zero1_equivalence() {
  return trains_like_ddp("Zero1");
}
std::string zero1_memory() {
  return keeps(Stage::Zero1, "Zero1.KeepsOptimizerStateForItsShardOnly",
               "Zero1.KeepsOptimizerStateForItsShardOnlyOnASeededModel");
}
std::string zero1_traffic() {
  return moves(Stage::Zero1, "Zero1");
}
std::string zero2_equivalence() {
  return trains_like_ddp("Zero2");
}
std::string zero2_memory() {
  // Once built (TODO 3's constructor): no full gradient, and the formula's bytes (m, v included).
  Recorded built("Zero2.KeepsOnlyItsShardOfGradientsOnceBuilt");
  const std::vector<int64_t> numels{lab06::testing::model_numel(lab06::lab_model())};
  for (int n : {1, 2, 3, 5})
    for (int rank = 0; rank < n; ++rank) {
      const std::string at = built.test() + ": " + fixed(n) + ", rank " + std::to_string(rank);
      expect_equal(built.next<int>("the full gradient held"), 0, at + ": a full gradient held");
      expect_equal(built.next<int64_t>("bytes held"),
                   persistent_bytes(Stage::Zero2, numels, n, rank), at + ": bytes held once built");
    }
  return keeps(Stage::Zero2, "Zero2.KeepsOnlyItsShardOfGradientsAndOptimizerState",
               "Zero2.KeepsOnlyItsShardOfGradientsAndOptimizerStateOnASeededModel");
}
std::string zero2_traffic() {
  return moves(Stage::Zero2, "Zero2");
}

// TODO 5's order, holding and memory tests record two steps on one Fsdp (prefetch_test.cpp).
constexpr int kPrefetchSteps = 2;

// ---- TODOs 4 and 5: FSDP -----------------------------------------------------------------------
std::string fsdp_equivalence() {
  return trains_like_ddp("Fsdp");
}

// The highest level of the allocations a run recorded (record_peak), which must be the peak it
// reported: the figure the bounds below are applied to is the judge's own.
int64_t derived_peak(Recorded& r, const std::string& who) {
  const auto reported = r.next<int64_t>("the peak");
  const auto start = r.next<int64_t>("the allocated bytes at the step's start");
  const int64_t peak = r.peak_of_events(who, start);
  if (peak != reported)
    throw Rejection(who + ": the reported peak " + show(reported) +
                    " B is not the highest level of its recorded allocations, " + show(peak) +
                    " B");
  return peak;
}

// The recorded peaks of N = 3 ranks on the lab model, within [shards + the largest unit, shards +
// `bound_units` + DDP's activations]: the activations from the judge's own DDP run.
void expect_peaks(const std::string& test, int64_t values_units, bool prefetch) {
  const int n = 3;
  const std::vector<int64_t> numels = lab06::testing::unit_numels(lab06::lab_model());
  std::vector<int64_t> bytes;
  for (int64_t numel : numels) bytes.push_back(4 * padded_of(numel, n));
  std::sort(bytes.rbegin(), bytes.rend());
  const std::vector<TrainResult> reference = ddp(n);
  Recorded r(test);
  for (int rank = 0; rank < n; ++rank) {
    const TrainResult& d = reference[std::size_t(rank)];
    const int64_t shards = persistent_bytes(Stage::Zero3, numels, n, rank);
    const int64_t held = values_units * bytes[0] + (prefetch ? bytes[1] : bytes[0]);
    const int64_t bound = shards + held + d.peak_bytes - d.persistent_bytes;
    const int64_t peak = derived_peak(r, test + ": rank " + std::to_string(rank));
    const std::string at = test + ": rank " + std::to_string(rank) + "'s peak " + show(peak) + " B";
    if (peak > bound)
      throw Rejection(at + " exceeds the shards + the units' full buffers + DDP's activations, " +
                      show(bound) + " B");
    if (peak < shards + bytes[0])
      throw Rejection(at + " is below the shards + the largest unit's full values, " +
                      show(shards + bytes[0]) + " B: no step ran");
  }
}

std::string fsdp_memory() {
  keeps(Stage::Zero3, "Fsdp.KeepsOnlyShardsBetweenSteps",
        "Fsdp.KeepsOnlyShardsBetweenStepsOnASeededModel");
  expect_peaks("Fsdp.PeakIsTheShardsPlusOneUnitPlusActivations", 1, false);
  return "the shards' bytes are the formula's, the peak within one unit's full buffers";
}

std::string set_text(const std::set<int64_t>& s) {
  std::string t = "{";
  for (int64_t u : s) t += (t.size() > 1 ? ", " : "") + std::to_string(u);
  return t + "}";
}

// The hooks rank 0 saw in step k of `steps` (one record_seen), in the order a forward and a
// backward fire them, with the units that hold full values (`values(hook, u)`) and a full
// gradient (only the unit whose backward runs).
void expect_seen_step(Recorded& r, int k, int steps, int64_t units,
                      const std::function<std::set<int64_t>(const std::string&, int64_t)>& values) {
  const std::string step =
      steps > 1 ? ", step " + std::to_string(k + 1) + " of " + std::to_string(steps) : "";
  expect_equal(r.next<int64_t>("the hooks seen"), 4 * units, r.test() + step + ": the hooks seen");
  std::vector<std::pair<std::string, int64_t>> order;
  for (int64_t u = 0; u < units; ++u)
    order.insert(order.end(), {{"before_forward", u}, {"after_forward", u}});
  for (int64_t u = units - 1; u >= 0; --u)
    order.insert(order.end(), {{"before_backward", u}, {"after_backward", u}});
  for (const auto& [hook, u] : order) {
    const std::string at = r.test() + step + ": at " + hook + " of unit " + std::to_string(u);
    expect_equal(r.line("the hook"), hook, at + ": the hook");
    expect_equal(r.next<int64_t>("the unit"), u, at + ": the unit");
    const std::set<int64_t> want_values = values(hook, u);
    const std::set<int64_t> want_grads =
        hook == "before_backward" ? std::set<int64_t>{u} : std::set<int64_t>{};
    const auto got_values =
        r.sequence<int64_t>(at + ": the units with full values", want_values.size());
    const auto got_grads =
        r.sequence<int64_t>(at + ": the units with a full gradient", want_grads.size());
    expect_equal(set_text({got_values.begin(), got_values.end()}), set_text(want_values),
                 at + ": the units with full values");
    expect_equal(set_text({got_grads.begin(), got_grads.end()}), set_text(want_grads),
                 at + ": the units with a full gradient");
  }
}
// `steps` steps recorded one after another (TODO 5's tests: two on one Fsdp), each alike.
void expect_seen(const std::string& test, int64_t units,
                 const std::function<std::set<int64_t>(const std::string&, int64_t)>& values,
                 int steps = 1) {
  Recorded r(test);
  for (int k = 0; k < steps; ++k) expect_seen_step(r, k, steps, units, values);
}
std::set<int64_t> just_in_time(const std::string& hook, int64_t u) {
  return hook.rfind("before", 0) == 0 ? std::set<int64_t>{u} : std::set<int64_t>{};
}

// Rank 0's collectives and unit computations (fsdp_step.h's timeline), the order built here. The
// exact sequence lives only here: the tests check it by its rules (fsdp_step.h's order_problem).
std::vector<std::string> expected_timeline(const gtl::nn::ModelConfig& model, int n, int prefetch) {
  const std::vector<int64_t> numels = lab06::testing::unit_numels(model);
  const int64_t units = int64_t(numels.size());
  const auto op = [&](const char* what, int64_t u, bool async) {
    return std::string(what) + (async ? "(async) " : " ") +
           std::to_string(4 * padded_of(numels[std::size_t(u)], n)) + " B";
  };
  std::vector<std::string> want;
  for (int64_t u = 0; u < units; ++u) {
    if (prefetch == 0 || u == 0) want.push_back(op("gather", u, false));
    if (prefetch == 1 && u + 1 < units) want.push_back(op("gather", u + 1, true));
    want.push_back("forward " + std::to_string(u));
  }
  for (int64_t u = units - 1; u >= 0; --u) {
    if (prefetch == 0 || u == units - 1) want.push_back(op("gather", u, false));
    if (prefetch == 1 && u > 0) want.push_back(op("gather", u - 1, true));
    want.push_back("backward " + std::to_string(u));
    want.push_back(op("reduce", u, false));
  }
  return want;
}
// `steps` timelines recorded one after another (TODO 5's tests: two steps on one Fsdp), each alike.
void expect_timeline(const std::string& test, const gtl::nn::ModelConfig& model, int n,
                     int prefetch, int steps = 1) {
  const std::vector<std::string> want = expected_timeline(model, n, prefetch);
  Recorded r(test);
  for (int k = 0; k < steps; ++k) {
    const std::string at =
        test +
        (steps > 1 ? ", step " + std::to_string(k + 1) + " of " + std::to_string(steps)
                   : std::string()) +
        ": ";
    expect_equal(r.next<std::size_t>("the timeline's length"), want.size(),
                 at + "the number of collectives and unit computations");
    for (std::size_t i = 0; i < want.size(); ++i)
      expect_equal(r.line("an event"), want[i], at + "event " + std::to_string(i));
  }
}

std::string fsdp_gather_free_order() {
  const int64_t lab_units = int64_t(lab06::testing::unit_numels(lab06::lab_model()).size());
  expect_seen("Fsdp.HoldsOnlyTheComputingUnitsFullBuffers", lab_units, just_in_time);
  const std::string seeded = "Fsdp.HoldsOnlyTheComputingUnitsFullBuffersOnASeededModel";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  expect_seen(seeded, int64_t(lab06::testing::unit_numels(c.config.model).size()), just_in_time);
  expect_timeline("Fsdp.CollectivesFollowTheUnits", lab06::lab_model(), 2, 0);
  return "only the computing unit's full buffers are held; the collectives follow the units";
}

std::string fsdp_traffic() {
  return moves(Stage::Zero3, "Fsdp");
}

std::string prefetch_order() {
  trains_like_ddp("Prefetch");
  expect_timeline("Prefetch.IssuesTheNextUnitsGatherBeforeTheCurrentUnitComputes",
                  lab06::lab_model(), 2, 1, kPrefetchSteps);
  const std::string seeded =
      "Prefetch.IssuesTheNextUnitsGatherBeforeTheCurrentUnitComputesOnASeededModel";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  expect_timeline(seeded, c.config.model, c.world, 1, kPrefetchSteps);
  const int64_t units = int64_t(lab06::testing::unit_numels(lab06::lab_model()).size());
  expect_seen(
      "Prefetch.HoldsTheComputingUnitAndTheNextOne", units,
      [&](const std::string& hook, int64_t u) -> std::set<int64_t> {
        if (hook == "before_forward") return {u, std::min(u + 1, units - 1)};
        if (hook == "before_backward") return {u, std::max<int64_t>(u - 1, 0)};
        if (hook == "after_forward" && u + 1 < units) return {u + 1};
        if (hook == "after_backward" && u > 0) return {u - 1};
        return {};
      },
      kPrefetchSteps);
  return "training is DDP's, the next unit's gather is issued before each unit computes";
}

std::string prefetch_memory() {
  const int n = 3;
  const std::vector<int64_t> numels = lab06::testing::unit_numels(lab06::lab_model());
  const int64_t units = int64_t(numels.size());
  Recorded r("Prefetch.CostsExactlyOneExtraUnitOfMemory");
  const auto extra = [&](int64_t next) {
    return next >= 0 && next < units ? 4 * padded_of(numels[std::size_t(next)], n) : 0;
  };
  for (int k = 0; k < kPrefetchSteps; ++k) {
    const std::string at = r.test() + ", step " + std::to_string(k + 1) + ": the extra bytes at ";
    for (int64_t u = 0; u < units; ++u)
      expect_equal(r.next<int64_t>("the extra bytes"), extra(u + 1),
                   at + "before_forward of unit " + std::to_string(u));
    for (int64_t u = units - 1; u >= 0; --u)
      expect_equal(r.next<int64_t>("the extra bytes"), extra(u - 1),
                   at + "before_backward of unit " + std::to_string(u));
  }
  expect_peaks("Prefetch.PeakIsTheShardsPlusTwoUnitsPlusActivations", 2, true);
  return "exactly the next unit's full values more; the peak within two units";
}

// TODO 5 on its own (PrefetchAlone's record): every rank, every unit of `config`, one prefetch:
// one async all-gather with its Work kept, 4 bytes per padded element added, nothing issued
// again, and the unit's full initial values.
void expect_prefetches(Recorded& r, const gtl::nn::ModelConfig& config, int n,
                       const std::string& input) {
  for (int rank = 0; rank < n; ++rank) {
    auto model = gtl::nn::make_model(config);
    const auto units = flats(*model, n, rank);
    expect_equal(r.next<std::size_t>("the unit count"), units.size(),
                 r.test() + ": " + input + ", rank " + std::to_string(rank) + ": units");
    for (std::size_t u = 0; u < units.size(); ++u) {
      const std::string at = r.test() + ": " + input + ", rank " + std::to_string(rank) +
                             ", unit " + std::to_string(u) + ": ";
      expect_equal(r.next<int64_t>("gathers issued"), int64_t{1}, at + "all-gathers issued");
      expect_equal(r.next<int>("async"), 1, at + "the gather was asynchronous");
      expect_equal(r.next<int>("work kept"), 1, at + "in_flight(u) held its Work");
      expect_equal(r.next<int64_t>("bytes added"), 4 * units[u]->padded_numel(),
                   at + "the bytes added (the full values)");
      expect_equal(r.next<int64_t>("gathers again"), int64_t{0}, at + "gathers issued again");
      r.expect_digest(units[u]->values().to_vector(), at + "the prefetched full values");
    }
  }
}

std::string prefetch_alone() {
  Recorded fixed_runs("PrefetchAlone.IssuesOneAsyncGatherIntoFreshValues");
  for (int n : {2, 3, 5}) expect_prefetches(fixed_runs, lab06::lab_model(), n, fixed(n));
  const std::string seeded = "PrefetchAlone.IssuesOneAsyncGatherIntoFreshValuesOnASeededModel";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  Recorded s(seeded);
  expect_prefetches(s, c.config.model, c.world, lab06_cases::describe(c));
  Recorded ends("PrefetchAlone.DoesNothingPastEitherEnd");
  for (int rank = 0; rank < 2; ++rank)
    expect_equal(ends.next<int64_t>("gathers past the ends"), int64_t{0},
                 ends.test() + ", rank " + std::to_string(rank) + ": gathers issued");
  return "every unit's prefetch is one async gather of its weights, 4 bytes per padded element";
}

// ---- the overlap timeline: the recorded traces, checked and simulated here ----------------------
// One recorded line back into an event (the core's text form, gtl/distributed/trace_text.h).
gtl::dist::TraceEvent parse_event(const std::string& line, const std::string& what) {
  std::optional<gtl::dist::TraceEvent> e = gtl::dist::parse_trace_event_line(line);
  if (!e) throw Rejection(what + ": a malformed trace event");
  return *e;
}

// The leaf modules' FLOPs and bytes of one forward and backward of the reference model on
// kReferenceBatchPerRank samples, as the core's trace hooks count them (fsdp_step.h's input).
std::pair<double, double> reference_work() {
  auto model = gtl::nn::make_model(lab06::reference_model());
  auto trace = std::make_shared<gtl::dist::Trace>();
  gtl::nn::HookHandle traced = gtl::dist::trace_modules(*model, trace);
  gtl::nn::Context ctx;
  gtl::Tensor y =
      model->forward(gtl::Tensor::full({lab06::kReferenceBatchPerRank, 1, 28, 28}, 0.5), ctx);
  model->backward(ctx, gtl::Tensor::ones(y.shape()));
  double flops = 0, bytes = 0;
  for (const gtl::dist::TraceEvent& e : trace->events(gtl::dist::TraceKind::ModuleEnd))
    if (e.leaf) flops += e.flops, bytes += e.mem_bytes;
  return {flops, bytes};
}

// The fraction of a rank's all-gather time that overlaps compute in a simulated timeline.
double hidden_gathers(const gtl::dist::Timeline& timeline, int rank) {
  const auto& intervals = timeline.ranks[std::size_t(rank)].intervals;
  double busy = 0, hidden = 0;
  for (const gtl::dist::Interval& g : intervals) {
    if (g.category != gtl::dist::Category::Communication || g.op != "all_gather") continue;
    busy += g.duration();
    for (const gtl::dist::Interval& c : intervals)
      if (c.category == gtl::dist::Category::Compute)
        hidden += std::max(0.0, std::min(g.end, c.end) - std::max(g.start, c.start));
  }
  return busy > 0 ? hidden / busy : 1.0;
}

// Two ranks' traces of one step with `prefetch` (the second of two on one Fsdp): each must hold the
// reference step's work and the collectives in the order the unit list gives; returns the judge's
// simulated timeline of them.
gtl::dist::Timeline judged_timeline(Recorded& r, int prefetch) {
  const std::string what = prefetch ? "prefetch 1" : "just in time";
  if (r.next<std::size_t>(what + ": the number of ranks") != 2)
    throw Rejection(r.test() + ": " + what + ": not one trace per rank");
  std::vector<std::vector<gtl::dist::TraceEvent>> traces(2);
  for (auto& events : traces) {
    const auto n = r.next<std::size_t>(what + ": a trace's length");
    for (std::size_t k = 0; k < n; ++k) events.push_back(parse_event(r.line(what), r.test()));
  }
  auto model = gtl::nn::make_model(lab06::reference_model());
  std::vector<std::string> unit_paths;
  for (std::size_t i = 0; i < model->size(); ++i)
    if ((*model)[i].num_parameters() > 0) unit_paths.push_back(std::to_string(i));
  const std::vector<std::string> want = expected_timeline(lab06::reference_model(), 2, prefetch);
  const auto [flops, bytes] = reference_work();
  for (std::size_t rank = 0; rank < 2; ++rank) {
    const std::string at = r.test() + ": " + what + ", rank " + std::to_string(rank);
    std::vector<std::string> got;
    double got_flops = 0, got_bytes = 0;
    for (const gtl::dist::TraceEvent& e : traces[rank]) {
      if (e.op == "all_gather" || e.op == "reduce_scatter")
        got.push_back((e.op == "all_gather" ? std::string("gather") : std::string("reduce")) +
                      (e.async ? "(async) " : " ") + std::to_string(e.bytes) + " B");
      if (e.kind == gtl::dist::TraceKind::ModuleBegin)
        for (std::size_t u = 0; u < unit_paths.size(); ++u)
          if (e.module == unit_paths[u]) got.push_back(e.op + " " + std::to_string(u));
      if (e.kind == gtl::dist::TraceKind::ModuleEnd && e.leaf)
        got_flops += e.flops, got_bytes += e.mem_bytes;
    }
    if (got != want)
      throw Rejection(at +
                      ": the trace's collectives and units are not in the order the unit "
                      "list gives");
    if (got_flops != flops || got_bytes != bytes)
      throw Rejection(at + ": the trace holds " + show(got_flops) + " FLOPs and " +
                      show(got_bytes) + " bytes of compute, one step of the reference model " +
                      show(flops) + " and " + show(bytes));
  }
  return gtl::dist::simulate_timeline(traces, lab06::reference_cluster());
}

std::string prefetch_overlap_timeline() {
  Recorded r("Prefetch.HidesGathersBehindComputeOnTheReferenceCluster");
  const gtl::dist::Timeline pre = judged_timeline(r, 1), jit = judged_timeline(r, 0);
  const double hidden = std::min(hidden_gathers(pre, 0), hidden_gathers(pre, 1));
  const double jit_hidden = std::max(hidden_gathers(jit, 0), hidden_gathers(jit, 1));
  if (!(hidden >= 0.6))
    throw Rejection(r.test() + ": the judge's simulation of the recorded traces hides " +
                    show(hidden) + " of the gathers with prefetch, below the bar 0.6");
  if (!(jit_hidden <= 0.05))
    throw Rejection(r.test() + ": the judge's simulation hides " + show(jit_hidden) +
                    " of the synchronous gathers, above 0.05");
  if (!(pre.step_time() < jit.step_time()))
    throw Rejection(r.test() + ": in the judge's simulation prefetch does not shorten the step");
  const std::vector<double> figures = {hidden, jit_hidden, pre.step_time(), jit.step_time()};
  std::size_t k = 0;
  for (const char* name : {"the hidden fraction with prefetch", "the hidden fraction without",
                           "the step time with prefetch", "the step time without"}) {
    const auto got = r.next<double>(name);
    if (!(std::fabs(got - figures[k]) <= 1e-9 * std::fabs(figures[k])))
      throw Rejection(r.test() + ": the test reported " + name + " " + show(got) +
                      ", the judge's simulation gives " + show(figures[k]));
    ++k;
  }
  return "the traces hold the step's work in the units' order; simulated here, prefetch hides " +
         show(hidden) + " of the gathers";
}

std::string real_processes(std::initializer_list<std::tuple<int, const char*, const char*>> runs) {
  for (auto [world, backend, test] : runs) {
    Recorded r(test);
    expect_equal(r.next<std::string>("the backend"), std::string(backend),
                 r.test() + ": the backend");
    expect_equal(r.next<int>("the world size"), world, r.test() + ": the world size");
    const TrainResult want = ddp(world)[0];
    r.expect_digest(want.weights, "the final weights on " + std::to_string(world) + " processes");
    r.expect_digest(want.losses, "rank 0's losses on " + std::to_string(world) + " processes");
  }
  return runs.size() == 1 ? "the run equals in-process DDP bit for bit"
                          : "both runs equal in-process DDP bit for bit";
}

std::string fsdp_real_processes() {
  return real_processes(
      {{1, "in-process", "RealProcesses.OneProcessWithoutALauncherMatchesOneInProcessRank"},
       {2, "mpi", "RealProcesses.MpirunTwoProcessesMatchTwoInProcessRanks"}});
}

// ZeRO-1 and ZeRO-2 as two processes (lab06_fsdp_train --stage 1 or 2): the same record.
std::string zero1_processes() {
  return real_processes({{2, "mpi", "Zero1Processes.MpirunTwoProcessesMatchTwoInProcessRanks"}});
}

// TODO 8 as two processes (lab06_fsdp_train --stage bf16): rank 0's copies, every unit's fp32
// values (make_units') rounded to bf16 by the core.
std::string bf16_processes() {
  Recorded r("Bf16Processes.MpirunTwoProcessesGatherEveryUnitsRoundedValues");
  expect_equal(r.next<std::string>("the backend"), std::string("mpi"), r.test() + ": the backend");
  expect_equal(r.next<int>("the world size"), 2, r.test() + ": the world size");
  auto model = gtl::nn::make_model(lab06::lab_model());
  std::vector<float> want;
  for (const auto& flat : flats(*model, 2, 0)) {
    const std::vector<float> v =
        flat->values().to(gtl::DType::BFloat16).to(gtl::DType::Float32).to_vector();
    want.insert(want.end(), v.begin(), v.end());
  }
  r.expect_digest(want, "rank 0's bf16 copies of every unit on 2 processes");
  return "rank 0's copies are the units' values rounded to bf16, bit for bit";
}

std::string zero2_processes() {
  return real_processes({{2, "mpi", "Zero2Processes.MpirunTwoProcessesMatchTwoInProcessRanks"}});
}

// The GPU check: two ranks sharing one GPU. Each rank's losses within GEMM rounding of DDP's on
// the CPU (gpu_test.cpp derives the tolerance); its persistent bytes the ZeRO-3 formula's; its
// traffic ZeRO-3's (two gathers and one reduce-scatter of each unit).
std::string fsdp_gpu() {
  const int n = 2;
  const std::vector<TrainResult> want = ddp(n);
  Recorded r("GpuFsdp.TwoRanksSharingOneGpuTrainAsOnTheCpu");
  for (int rank = 0; rank < n; ++rank) {
    const std::vector<float>& losses = want[std::size_t(rank)].losses;
    const std::string at = r.test() + ", rank " + std::to_string(rank);
    expect_close(std::vector<double>(losses.begin(), losses.end()),
                 r.sequence<float>(at + ": the losses", losses.size()), lab06_cases::kGpuLossRtol,
                 0.0, at + ": the losses");
  }
  Recorded b("GpuFsdp.EachRanksGpuAllocatorHoldsExactlyItsShards");
  const std::vector<int64_t> numels = lab06::testing::unit_numels(lab06::lab_model());
  for (int rank = 0; rank < n; ++rank) {
    const std::string at = b.test() + ": " + fixed(n) + ", rank " + std::to_string(rank);
    expect_equal(b.next<int64_t>("persistent bytes"),
                 persistent_bytes(Stage::Zero3, numels, n, rank), at + ": persistent bytes");
    expect_traffic(b, numels, n, 2, at);
  }
  return "both ranks' losses are the CPU's within rounding, their bytes and traffic ZeRO-3's";
}

// ---- TODO 6: sharded checkpoints ---------------------------------------------------------------
// Each rank's saved files (the test's record_shard_files) after 2 steps: unit u's value shard is
// chunk r of DDP's weights of unit u, zero-padded; m and v hold 2 values per real element.
void expect_shard_files(const std::string& test, const TrainConfig& config, int n) {
  const std::vector<int64_t> numels = lab06::testing::unit_numels(config.model);
  const std::vector<float> weights = ddp(n, with_steps(config, 2))[0].weights;
  Recorded r(test);
  for (int rank = 0; rank < n; ++rank) {
    std::size_t first = 0;
    int64_t optim = 0;
    for (std::size_t u = 0; u < numels.size(); ++u) {
      std::vector<float> padded(weights.begin() + long(first),
                                weights.begin() + long(first + std::size_t(numels[u])));
      padded.resize(std::size_t(padded_of(numels[u], n)), 0.f);
      const int64_t shard = shard_of(numels[u], n);
      const std::vector<float> mine(padded.begin() + rank * shard,
                                    padded.begin() + (rank + 1) * shard);
      const std::string at = test + ": N " + std::to_string(n) + ", rank " + std::to_string(rank) +
                             ", unit" + std::to_string(u) + ".values";
      expect_equal(r.next<int64_t>("a shard's size"), shard, at + ": its size");
      r.expect_digest(mine, at + " (chunk r of the trained unit, padding included)");
      first += std::size_t(numels[u]);
      optim += 2 * real_of(numels[u], n, rank);
    }
    const std::string at = test + ": N " + std::to_string(n) + ", rank " + std::to_string(rank);
    expect_equal(r.next<int64_t>("the optimizer's elements"), optim,
                 at + ": elements of the saved optimizer state");
  }
}

std::string checkpoint_shards() {
  expect_shard_files("ShardedCheckpoint.EachRankSavesExactlyItsShardsAndOptimizerState", {}, 3);
  const std::string seeded =
      "ShardedCheckpoint.EachRankSavesExactlyItsShardsAndOptimizerStateOnASeededRun";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  expect_shard_files(seeded, c.config, c.world);
  return "each rank's file holds its value shards of the trained units and its state's size";
}

std::string checkpoint_resume() {
  Recorded r("ShardedCheckpoint.ResumesBitForBitWithTheSameWorldSize");
  for (int n : {2, 5})
    expect_runs(r, ddp(n, with_steps({}, 4)), fixed(n) + ", resumed at step 2", 2);
  const std::string seeded = "ShardedCheckpoint.ResumesBitForBitWithTheSameWorldSizeOnASeededRun";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  Recorded s(seeded);
  expect_runs(s, ddp(c.world, with_steps(c.config, 4)),
              lab06_cases::describe(c) + ", resumed at step 3", 3);
  for (const char* test : {"ShardedCheckpoint.RefusesToLoadShardsCutForAnotherWorldSize",
                           "ShardedCheckpoint.RefusesToLoadAnotherRanksShards"}) {
    Recorded t(test);
    if (!t.next<bool>("whether loading threw"))
      throw Rejection(t.test() + ": loading the wrong shards did not throw gtl::Error");
  }
  return "the resumed runs equal DDP's uninterrupted run; wrong shards are refused";
}

std::string checkpoint_consolidate() {
  Recorded r("ShardedCheckpoint.ConsolidatesIntoTheSingleProcessModelsParameters");
  for (int n : {3, 5})
    r.expect_digest(ddp(n, with_steps({}, 3))[0].weights,
                    fixed(n) + ": the consolidated parameters (DDP's weights after 3 steps)");
  const std::string seeded =
      "ShardedCheckpoint.ConsolidatesIntoTheSingleProcessModelsParametersOnASeededRun";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  Recorded s(seeded);
  s.expect_digest(ddp(c.world, with_steps(c.config, 3))[0].weights,
                  lab06_cases::describe(c) + ": the consolidated parameters");
  return "the consolidated parameters are the trained weights";
}

// ---- TODO 6 on its own: files, restored state and consolidation of known shards -----------------
// The unit-level tests fill the shards with lab06_cases::unit_value above a base (0 for the fixed
// tests, drawn from the seed for the seeded ones) and AdamW's m and v with optimizer_value: the
// judge recomputes from these what each file must hold, what a load must restore and what
// consolidate must write.
struct UnitsCase {
  gtl::nn::ModelConfig model;
  int world = 2;
  int64_t base = 0;
  std::string input;
  std::string test;  // the test that recorded it
};
std::vector<UnitsCase> units_cases(const std::string& test, const std::vector<int>& worlds) {
  std::vector<UnitsCase> cases;
  for (int n : worlds) cases.push_back({lab06::lab_model(), n, 0, "N " + std::to_string(n), test});
  const std::string seeded = test + "OnASeededModel";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  const int64_t base = lab06_cases::seeded_value_base(seeded);
  cases.push_back({c.config.model, c.world, base,
                   lab06_cases::describe(c) + ", value base " + std::to_string(base), seeded});
  return cases;
}

// Rank `rank`'s chunk of unit u's known flat buffer, padding (zeros) included.
std::vector<float> known_shard(int64_t base, std::size_t u, int64_t numel, int n, int rank) {
  std::vector<float> v(std::size_t(shard_of(numel, n)));
  for (std::size_t j = 0; j < v.size(); ++j)
    v[j] = lab06_cases::unit_value(base, u, rank * shard_of(numel, n) + int64_t(j), numel);
  return v;
}

// One recorded shard (its size, then its digest) against the known chunk.
void expect_shard(Recorded& r, const UnitsCase& c, std::size_t u, int64_t numel, int rank,
                  const std::string& what) {
  const std::string at =
      c.input + ", rank " + std::to_string(rank) + ", unit " + std::to_string(u) + ": " + what;
  expect_equal(r.next<std::size_t>(at), std::size_t(shard_of(numel, c.world)),
               r.test() + ": " + at + ": its size (ceil(numel / N))");
  r.expect_digest(known_shard(c.base, u, numel, c.world, rank),
                  at + " (chunk r of the unit's known values, padding included)");
}

std::string checkpoint_units_layout() {
  const std::string test = "ShardedCheckpointUnits.EachFileHoldsOnlyItsRanksShardsAndLayout";
  for (const UnitsCase& c : units_cases(test, {3})) {
    Recorded r(c.test);
    const std::vector<int64_t> numels = lab06::testing::unit_numels(c.model);
    for (int rank = 0; rank < c.world; ++rank) {
      const std::string at = r.test() + ": " + c.input + ", rank " + std::to_string(rank);
      expect_equal(r.next<int64_t>("world_size"), int64_t(c.world), at + ": the world_size entry");
      expect_equal(r.next<int64_t>("rank"), int64_t(rank), at + ": the rank entry");
      for (std::size_t u = 0; u < numels.size(); ++u)
        expect_shard(r, c, u, numels[u], rank, "the file's unit" + std::to_string(u) + ".values");
    }
  }
  return "each rank's file holds its world size, its rank and exactly its chunk of every unit";
}

std::string checkpoint_units_roundtrip() {
  const std::string test =
      "ShardedCheckpointUnits.SaveThenLoadRestoresShardsAndOptimizerStateBitwise";
  Recorded fixed_runs(test), seeded_runs(test + "OnASeededModel");
  for (const UnitsCase& c : units_cases(test, {2, 3, 5})) {
    Recorded& r = c.test == test ? fixed_runs : seeded_runs;
    const std::vector<int64_t> numels = lab06::testing::unit_numels(c.model);
    for (int rank = 0; rank < c.world; ++rank) {
      for (std::size_t u = 0; u < numels.size(); ++u)
        expect_shard(r, c, u, numels[u], rank, "the restored shard_values()");
      // m and v of each shard param (a unit whose chunk holds real elements), in unit order.
      std::vector<int64_t> sizes;
      for (int64_t numel : numels)
        if (real_of(numel, c.world, rank) > 0)
          sizes.insert(sizes.end(), 2, real_of(numel, c.world, rank));
      const std::string at = r.test() + ": " + c.input + ", rank " + std::to_string(rank);
      expect_equal(r.next<std::size_t>("the state's tensors"), sizes.size(),
                   at + ": tensors of the restored optimizer.state() (m and v per shard param)");
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        std::vector<float> want(std::size_t(sizes[k]));
        for (std::size_t j = 0; j < want.size(); ++j)
          want[j] = lab06_cases::optimizer_value(rank, k, j);
        expect_equal(r.next<std::size_t>("a state tensor's size"), want.size(),
                     at + ": the size of state tensor " + std::to_string(k));
        r.expect_digest(want, c.input + ", rank " + std::to_string(rank) + ": restored state " +
                                  "tensor " + std::to_string(k) + " (the saved m or v)");
      }
      expect_equal(r.next<int64_t>("the step count"), int64_t{7},
                   at + ": the restored AdamW step count");
    }
  }
  return "every rank's shards, m, v and step count are restored exactly (fixed and seeded)";
}

std::string checkpoint_units_consolidate() {
  const std::string test = "ShardedCheckpointUnits.ConsolidatesKnownShardsIntoEveryParameter";
  Recorded fixed_runs(test), seeded_runs(test + "OnASeededModel");
  for (const UnitsCase& c : units_cases(test, {2, 5})) {
    Recorded& r = c.test == test ? fixed_runs : seeded_runs;
    // The parameters in model order walk the units' flat buffers: parameter p of unit u holds
    // the known values of its elements of the unit, the padding dropped.
    auto model = gtl::nn::make_model(c.model);
    for (std::size_t u = 0, unit = 0; u < model->size(); ++u) {
      if ((*model)[u].num_parameters() == 0) continue;
      const int64_t numel = (*model)[u].num_parameters();
      int64_t first = 0;
      for (const lab06::ParamRef& p : (*model)[u].parameters()) {
        std::vector<float> want(std::size_t(p.value.numel()));
        for (std::size_t j = 0; j < want.size(); ++j)
          want[j] = lab06_cases::unit_value(c.base, unit, first + int64_t(j), numel);
        first += p.value.numel();
        const std::string at = c.input + ", unit " + std::to_string(unit) + ", model." + p.name;
        expect_equal(r.next<std::size_t>(at), want.size(),
                     r.test() + ": " + at + ": the consolidated parameter's size");
        r.expect_digest(want, at + " (the units' known values in rank order, padding dropped)");
      }
      ++unit;
    }
  }
  return "every consolidated parameter holds the units' known values (fixed and seeded)";
}

// ---- TODO 8: bf16 compute copies ---------------------------------------------------------------
// Every rank's gathers (the test's record_gathers): the copy is the full fp32 values rounded to
// bf16 by the core, the all-gather and bf16_gather_bytes_sent (N - 1) shards of 2 bytes.
void expect_gathers(Recorded& r, const gtl::nn::ModelConfig& config, int n,
                    const std::string& input) {
  for (int rank = 0; rank < n; ++rank) {
    auto model = gtl::nn::make_model(config);
    const auto units = flats(*model, n, rank);
    const std::string at = r.test() + ": " + input + ", rank " + std::to_string(rank);
    expect_equal(r.next<std::size_t>("the units"), units.size(), at + ": the units gathered");
    for (std::size_t u = 0; u < units.size(); ++u) {
      const gtl::nn::FlatParameter& flat = *units[u];
      const std::vector<float> want =
          flat.values().to(gtl::DType::BFloat16).to(gtl::DType::Float32).to_vector();
      const std::string of = at + ", unit " + std::to_string(u);
      expect_equal(r.next<std::size_t>("a copy's size"), want.size(),
                   of + ": the bf16 copy's elements (the padded unit)");
      r.expect_digest(want, input + ", rank " + std::to_string(rank) + ", unit " +
                                std::to_string(u) + ": the bf16 copy (the fp32 values rounded)");
      const int64_t bytes = (n - 1) * shard_of(flat.numel(), n) * 2;
      expect_equal(r.next<int64_t>("the bytes sent"), bytes, of + ": the all-gather's bytes sent");
      expect_equal(r.next<int64_t>("bf16_gather_bytes_sent"), bytes,
                   of + ": bf16_gather_bytes_sent");
    }
  }
}

std::string fsdp_bf16() {
  Recorded fixed_runs("FsdpBf16.GathersTheFullValuesRoundedToBf16BitForBit");
  for (int n : {1, 2, 3, 5}) expect_gathers(fixed_runs, lab06::lab_model(), n, fixed(n));
  const std::string seeded = "FsdpBf16.GathersAndMovesHalfTheBytesOnASeededModel";
  const lab06_cases::RunCase c = lab06_cases::seeded_run(seeded);
  Recorded s(seeded);
  expect_gathers(s, c.config.model, c.world, lab06_cases::describe(c));
  Recorded kept("FsdpBf16.KeepsTheFp32ShardsAndPersistentBytes");
  for (int n : {2, 3}) {
    for (int rank = 0; rank < n; ++rank) {
      auto model = gtl::nn::make_model(lab06::lab_model());
      const auto units = flats(*model, n, rank);
      for (std::size_t u = 0; u < units.size(); ++u) {
        const std::string at = kept.test() + ": " + fixed(n) + ", rank " + std::to_string(rank) +
                               ", unit " + std::to_string(u);
        expect_equal(kept.next<int64_t>("the bytes added"), 2 * units[u]->padded_numel(),
                     at + ": the bytes the live bf16 copy adds (2 per padded element)");
        expect_equal(kept.next<int64_t>("the bytes left"), int64_t{0},
                     at + ": the bytes left after the copy is gone");
        kept.expect_digest(units[u]->shard_values().to_vector(),
                           fixed(n) + ", rank " + std::to_string(rank) + ", unit " +
                               std::to_string(u) + ": the fp32 shard after the gather (untouched)");
      }
    }
  }
  return "every bf16 copy is the fp32 values rounded, sent in half the bytes; the shards stay";
}

// ---- TODO 7 ------------------------------------------------------------------------------------
std::string clip_over_shards() {
  Recorded r("ClipOverShards.SeededGradientsWorldsAndMaxNorms");
  for (const lab06_cases::ClipCase& c : lab06_cases::seeded_clip_cases()) {
    const int64_t numel = int64_t(c.grad.size());
    const std::string input = "numel " + std::to_string(numel) + ", N " + std::to_string(c.world) +
                              ", max_norm " + show(c.max_norm);
    const std::string at = r.test() + ": " + input;
    std::vector<lab06::ParamRef> whole = {lab06::ParamRef{gtl::Tensor::zeros({numel}),
                                                          gtl::Tensor::from_vector(c.grad, {numel}),
                                                          gtl::Tensor(), "g"}};
    const double norm = gtl::optim::clip_grad_norm_(whole, c.max_norm).item();
    const std::vector<float> clipped = whole[0].grad.to_vector();
    const auto norms = r.sequence<float>(input + ": the ranks' norms", std::size_t(c.world));
    for (int rank = 1; rank < c.world; ++rank)
      if (std::memcmp(&norms[std::size_t(rank)], &norms[0], sizeof(float)) != 0)
        throw Rejection(at + ": rank " + std::to_string(rank) + "'s norm " +
                        show(norms[std::size_t(rank)]) + " differs from rank 0's " +
                        show(norms[0]));
    gtl::judge::expect_close({norm}, {norms[0]}, 1e-6, 0, at + ": the global norm");
    gtl::judge::expect_close({clipped.begin(), clipped.end()},
                             r.sequence<float>(input + ": the clipped shards", clipped.size()),
                             1e-6, 1e-7, at + ": the clipped gradient");
  }
  return "every seeded gradient's global norm and clipped shards are one process's";
}

// The steps taken (record_all of a bool per rank): all skip when the overflowing rank's shard holds
// a real element, all step otherwise.
void expect_decision(Recorded& r, int n, int overflow, int64_t numel) {
  const bool inf = overflow >= 0 && real_of(numel, n, overflow) > 0;
  const std::string input = "numel " + std::to_string(numel) + ", N " + std::to_string(n) +
                            ", overflowing rank " + std::to_string(overflow);
  const std::string at = r.test() + ": " + input;
  const auto stepped = r.sequence<int>(input + ": the steps taken", std::size_t(n));
  for (int rank = 0; rank < n; ++rank)
    if (stepped[std::size_t(rank)] != (inf ? 0 : 1))
      throw Rejection(
          at + ": rank " + std::to_string(rank) +
          (inf ? " stepped although a shard overflowed" : " skipped although no shard overflowed"));
}

std::string agree_found_inf() {
  Recorded fixed_cases("AgreeFoundInf.EveryRankSkipsTheStepWhenOneShardOverflowed");
  for (int n : {2, 3, 5}) {
    for (int overflow = 0; overflow < n; ++overflow) expect_decision(fixed_cases, n, overflow, 37);
    expect_decision(fixed_cases, n, -1, 37);
  }
  Recorded empty("AgreeFoundInf.ARankWithoutGradientsCountsAsFinite");
  expect_decision(empty, 5, -1, 3);
  expect_decision(empty, 5, 1, 3);
  Recorded seeded("AgreeFoundInf.SeededWorldsAndOverflowingRanks");
  for (const lab06_cases::InfCase& c : lab06_cases::seeded_inf_cases())
    expect_decision(seeded, c.world, c.overflow, c.numel);
  Recorded two_steps("AgreeFoundInf.AnOverflowThenACleanStepEveryRankStepsAgain");
  for (int n : {3, 5}) {
    expect_decision(two_steps, n, n - 1, 37);  // step 1: the last rank overflowed
    expect_decision(two_steps, n, -1, 37);     // step 2: nothing did
  }
  return "every rank skips exactly when some shard overflowed";
}

// TODO 7 as three processes: one process clipping lab06_clip_processes' whole gradient
// (clip_processes.h), each rank's slice of it, and the skip decisions from which rank overflowed.
std::string clip_processes() {
  namespace clip = lab06_clip_processes;
  Recorded r("ClipProcesses.ThreeProcessesClipByTheWholeNormAndAgreeOnOverflow");
  const std::vector<float> whole = clip::gradient(gtl::test_seed::seed());
  const auto numel = int64_t(whole.size());
  std::vector<lab06::ParamRef> ref = {lab06::ParamRef{
      gtl::Tensor::zeros({numel}), gtl::Tensor::from_vector(whole, {numel}), gtl::Tensor(), "g"}};
  const double norm = gtl::optim::clip_grad_norm_(ref, clip::kMaxNorm).item();
  const std::vector<float> clipped = ref[0].grad.to_vector();
  const std::vector<int> cases = clip::overflow_cases();
  float first = 0.f;
  for (int rank = 0; rank < clip::kWorld; ++rank) {
    const std::string who = "rank " + std::to_string(rank), at = r.test() + ": " + who;
    const auto got = r.next<float>(who + "'s norm");
    if (rank == 0) first = got;
    if (std::memcmp(&got, &first, sizeof(float)) != 0)
      throw Rejection(at + ": the norm " + show(got) + " differs from rank 0's " + show(first));
    gtl::judge::expect_close({norm}, {got}, 1e-6, 0, at + ": the global norm");
    const auto begin = clipped.begin() + rank * shard_of(numel, clip::kWorld);
    const int64_t real = real_of(numel, clip::kWorld, rank);
    gtl::judge::expect_close({begin, begin + real},
                             r.sequence<float>(who + "'s clipped shard", std::size_t(real)), 1e-6,
                             1e-7, at + ": the clipped shard");
    const auto stepped = r.sequence<int>(who + "'s steps taken", cases.size());
    for (std::size_t k = 0; k < cases.size(); ++k)
      if (stepped[k] != (cases[k] < 0 ? 1 : 0))
        throw Rejection(at + (cases[k] < 0 ? ": skipped although no shard overflowed"
                                           : ": stepped although rank " + std::to_string(cases[k]) +
                                                 "'s shard overflowed"));
  }
  return "three processes clip by the whole gradient's norm and skip exactly on an overflow";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(argc, argv,
                         {{"shard-math", shard_math},
                          {"zero1-equivalence", zero1_equivalence},
                          {"zero1-memory", zero1_memory},
                          {"zero1-traffic", zero1_traffic},
                          {"zero2-equivalence", zero2_equivalence},
                          {"zero2-memory", zero2_memory},
                          {"zero2-traffic", zero2_traffic},
                          {"fsdp-equivalence", fsdp_equivalence},
                          {"fsdp-memory", fsdp_memory},
                          {"fsdp-gather-free-order", fsdp_gather_free_order},
                          {"fsdp-traffic", fsdp_traffic},
                          {"prefetch-alone", prefetch_alone},
                          {"prefetch-order", prefetch_order},
                          {"prefetch-memory", prefetch_memory},
                          {"prefetch-overlap-timeline", prefetch_overlap_timeline},
                          {"zero1-processes", zero1_processes},
                          {"zero2-processes", zero2_processes},
                          {"fsdp-real-processes", fsdp_real_processes},
                          {"fsdp-gpu", fsdp_gpu},
                          {"checkpoint-shards", checkpoint_shards},
                          {"checkpoint-resume", checkpoint_resume},
                          {"checkpoint-consolidate", checkpoint_consolidate},
                          {"clip-over-shards", clip_over_shards},
                          {"agree-found-inf", agree_found_inf},
                          {"clip-processes", clip_processes},
                          {"checkpoint-units-layout", checkpoint_units_layout},
                          {"checkpoint-units-roundtrip", checkpoint_units_roundtrip},
                          {"checkpoint-units-consolidate", checkpoint_units_consolidate},
                          {"fsdp-bf16", fsdp_bf16},
                          {"bf16-processes", bf16_processes}});
}
