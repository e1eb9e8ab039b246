// TODO 5: the proof. A plan's twin (dp x tp x pp ranks, a small GPT) runs two training steps on
// in-process ranks through the student's make_plan_rank; each rank's allocator and trace are then
// held against the plan:
//   proof-loss     the twin trains as one process does on the whole batch: the loss of each step,
//                  the gradients each rank's AdamW steps on in each step (under ZeRO its shards;
//                  tolerances: handout); every copy of a parameter holds the same bits after
//                  step 2
//   proof-memory   each rank's peak in its steps is exactly its stage's share: the parameters,
//                  gradients and AdamW state (under ZeRO: F8's units as FlatParameters, AdamW
//                  over the rank's shards), one micro-batch's peak on that stage (under ZeRO-2
//                  and -3 with F9's whole buffers around each pass), and the saved bytes of the
//                  other micro-batches 1F1B holds there (min(pp - s, m) in all), each measured on
//                  the core's GPTStage alone (lab11_proof_cases.h)
//   proof-traffic  the trace holds the plan's messages and nothing else: m activations to the
//                  next stage and m gradients to the previous one a step, each [micro_batch, T, D]
//                  float32; under TP the TP group's all-reduces of the core's layers and loss
//                  (S3; under bf16 what a GEMM makes travels in bf16); an all-reduce of the
//                  stage's gradients in the DP group (ZeRO-1: each unit's reduce-scatter and
//                  all-gather; ZeRO-2: the reduce-scatter after every micro-batch; ZeRO-3: also
//                  the gathers before every forward and backward); with a tied table and pp > 1,
//                  an all-reduce of the table's gradient (under ZeRO-2 and -3 of its shard)
//                  between the pipeline's first and last stage
// Shapes: fixed cases (m < pp, m > pp, a world of 8, tied and untied, checkpointed, ZeRO-1, -2
// and -3, TP 2 and 4, SP, bf16-mixed at every ZeRO stage) and seeded ones drawn from the grading
// seed.
// Every check records what it measured (the losses and gradients, each rank's allocation events,
// each rank's traffic) for the judge, which recomputes the one process, the shares and the plan's
// traffic from the course alone.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "gtl/distributed/in_process.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl_judge_output.h"
#include "gtl_test.h"
#include "lab11_proof_cases.h"
#include "proof.h"

namespace {

using namespace gtl;
using namespace lab11_proof_cases;
using lab11::Config;
using lab11::ModelSpec;
using lab11::ProofBatch;

// ---- the twin ----------------------------------------------------------------------------------
struct RankRun {
  int stage = 0, dp_rank = 0, tp_rank = 0;
  float loss[2] = {0, 0};
  std::set<std::string> held;  // the stage's parameters, by name
  // After each step the gradients AdamW stepped on, by name (optimized(): under ZeRO the
  // shards'); after step 2 the values, by copy (copy_key).
  std::map<std::string, std::vector<float>> grads[2], params2;
  int64_t built = 0;                     // what the rank holds once make_plan_rank returns
  std::vector<int64_t> allocations;      // the allocator's events during the two steps
  std::vector<dist::TraceEvent> events;  // the two steps' (construction's left out)
};

struct TwinRun {
  std::vector<RankRun> ranks;
  std::string error;  // a failure of the student's code (thrown on a rank), else empty
};

// What must hold the same bits on every rank that has it, one word (the judge's record is read
// word by word): a parameter by name, one that TP cuts by name and TP rank ("h.0.mlp.fc1.weight/
// tp-1"); ZeRO-3's shard of a unit on DP rank d ("wte.weight/shard-1", and its TP rank under TP),
// the same on the two stages holding a tied table.
std::string copy_key(const ProofCase& c, const std::string& name, const RankRun& r, bool shard) {
  std::string key = name;
  if (shard) key += "/shard-" + std::to_string(r.dp_rank);
  if (c.config.tp > 1 && (shard || gtl::testing::cut_by_tp(name)))
    key += "/tp-" + std::to_string(r.tp_rank);
  return key;
}

TwinRun run_twin(const ProofCase& c) {
  const int world = c.config.dp * c.config.tp * c.config.pp;
  const ProofBatch b1 = make_batch(c, 1), b2 = make_batch(c, 2);
  TwinRun run;
  run.ranks.resize(static_cast<std::size_t>(world));
  dist::RunOptions options;
  options.timeout = std::chrono::seconds(30);  // a deadlock fails (and ends its test)
  for (int r = 0; r < world; ++r) options.allocators.push_back(make_cpu_caching_allocator());
  try {
    dist::run_ranks(
        world,
        [&](dist::Communicator& comm) {
          RankRun& out = run.ranks[static_cast<std::size_t>(comm.rank())];
          const EventLogScope log(*options.allocators[static_cast<std::size_t>(comm.rank())],
                                  &out.allocations);
          const Position at = position(c, comm.rank());
          out.stage = at.stage;
          out.dp_rank = at.dp_rank;
          out.tp_rank = at.tp_rank;
          std::unique_ptr<lab11::PlanRank> rank =
              lab11::make_plan_rank(c.model, c.seed, c.config, comm, kLr);
          // A training step's peak (TODO 1's) is graded, not construction's: moving a stage's
          // parameters into FlatParameters holds both copies for a moment.
          for (const int64_t e : out.allocations) out.built += e;
          out.allocations.clear();
          const std::size_t built = comm.trace()->events().size();
          for (const nn::ParamRef& p : rank->parameters()) out.held.insert(p.name);
          for (int step = 0; step < 2; ++step) {
            out.loss[step] = rank->step(step == 0 ? b1 : b2);
            for (const nn::ParamRef& p : rank->optimized()) {
              out.grads[step][p.name] = p.grad.to_vector();
            }
          }
          if (c.config.zero_stage < 3) {
            for (const nn::ParamRef& p : rank->parameters()) {
              out.params2[copy_key(c, p.name, out, false)] = p.value.to_vector();
            }
          } else {  // ZeRO-3 keeps no whole value: the shards, which a tied table's copies share
            for (const nn::ParamRef& p : rank->optimized()) {
              out.params2[copy_key(c, p.name, out, true)] = p.value.to_vector();
            }
          }
          const std::vector<dist::TraceEvent> all = comm.trace()->events();
          out.events.assign(all.begin() + static_cast<std::ptrdiff_t>(built), all.end());
        },
        options);
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  return run;
}

// The highest level of a run's allocation events from `start`: the rank's peak (what the judge
// derives too).
int64_t peak_of(const std::vector<int64_t>& events, int64_t start) {
  int64_t level = start, peak = start;
  for (const int64_t e : events) peak = std::max(peak, level += e);
  return peak;
}

// A failure on a rank (a gtl::Error, a timeout naming who waited for whom) ends the test: the
// other cases would only repeat it, each after its own timeout.
bool failed(const TwinRun& run, const ProofCase& c) {
  if (run.error.empty()) return false;
  ADD_FAILURE() << c.name() << ": the twin failed: " << run.error;
  return true;
}

std::string who(const RankRun& r) {
  return "stage " + std::to_string(r.stage) + " of DP rank " + std::to_string(r.dp_rank) +
         ", TP rank " + std::to_string(r.tp_rank);
}

}  // namespace

TEST(ProofStep, TrainsAsOneProcessOnTheWholeBatch) {
  const std::string name = "ProofStep.TrainsAsOneProcessOnTheWholeBatch";
  gtl::judge::Outputs out(name);
  for (const ProofCase& c : proof_cases(name)) {
    SCOPED_TRACE(c.name());
    const TwinRun run = run_twin(c);
    if (failed(run, c)) return;
    const OneProcess ref = one_process(c);
    for (int step = 0; step < 2; ++step) {
      double sum = 0;
      for (const RankRun& r : run.ranks) {
        if (r.stage == c.config.pp - 1) {
          if (r.tp_rank == 0) sum += r.loss[step];  // a NaN there fails the mean below
          const RankRun& first = run.ranks[static_cast<std::size_t>(
              (r.dp_rank * c.config.pp + r.stage) * c.config.tp)];
          EXPECT_TRUE(r.tp_rank == 0 || std::isnan(first.loss[step]) ||
                      r.loss[step] == first.loss[step])
              << who(r) << " returned the loss " << r.loss[step] << " in step " << step + 1
              << ", its TP rank 0 " << first.loss[step]
              << ": every TP rank of the last stage returns its DP rank's loss";
        } else {
          EXPECT_TRUE(std::isnan(r.loss[step]))
              << who(r) << " returned a loss " << r.loss[step] << " in step " << step + 1
              << ": only the last stage has one (NaN elsewhere)";
        }
      }
      const double mean = sum / c.config.dp;
      EXPECT_LE(std::fabs(mean - ref.loss[step]), loss_bar(c, step) * std::fabs(ref.loss[step]))
          << "step " << step + 1 << ": the DP ranks' mean loss is " << mean
          << ", one process on the whole batch gets " << ref.loss[step] << " (relative bar "
          << loss_bar(c, step)
          << (step == 0 ? "; revisit: which tokens each DP rank and micro-batch takes, the mean "
                          "of means)"
                        : "; step 2 trains on step 1's update: revisit which ranks combine "
                          "which gradients (the DP group, a tied table's two copies), with "
                          "which reduction, and the weight of each micro-batch's loss; the "
                          "gradient checks below name the parameters)");
    }
    std::set<std::string> holders;  // the parameters some rank holds
    std::map<std::string, const RankRun*> first_copy;
    const bool zero = c.config.zero_stage >= 1;
    for (const RankRun& r : run.ranks) {
      out.record(r.stage);
      out.record(r.loss[0]);
      out.record(r.loss[1]);
      out.record(r.held.size());
      for (const std::string& param : r.held) {
        out.record(param);
        ASSERT_EQ(ref.grads[0].count(param), 1u)
            << param << " on " << who(r) << ": the whole model has no such parameter";
        holders.insert(param);
      }
      out.record(r.params2.size());
      for (const auto& [copy, value] : r.params2) {
        out.record(copy);
        out.record_digest(value.data(), value.size());
        const auto [first, inserted] = first_copy.emplace(copy, &r);
        if (inserted) continue;
        const std::vector<float>& other = first->second->params2.at(copy);
        double apart = 0;  // the largest difference between the two copies
        for (std::size_t i = 0; i < value.size() && i < other.size(); ++i) {
          apart = std::max(apart, std::fabs(double(value[i]) - other[i]));
        }
        EXPECT_TRUE(value == other)
            << copy << " on " << who(r) << ": every copy of a parameter must hold the same bits "
            << "after a step; its copy on " << who(*first->second) << " differs by up to " << apart
            << " (revisit: which groups combine which gradients, and, under ZeRO, that both "
               "copies of a tied table are cut into the same chunks: F8)";
      }
      for (int step = 0; step < 2; ++step) {
        const std::map<std::string, std::vector<float>>& got = r.grads[step];
        std::vector<OwnedGradient> owned;
        try {
          owned = owned_gradients(c, r.stage, r.dp_rank, ref.grads[step], r.tp_rank);
        } catch (const std::out_of_range&) {
          ADD_FAILURE() << who(r) << " does not hold every parameter of its stage";
          break;
        }
        out.record(got.size());
        EXPECT_EQ(got.size(), owned.size())
            << who(r) << ": optimized() holds " << got.size() << " parameters; "
            << (zero ? "F8's units with real elements on this DP rank are "
                     : "the stage's parameters are ")
            << owned.size()
            << (zero ? " (revisit: one FlatParameter per unit, AdamW over each shard_param())"
                     : " (revisit: AdamW over the stage's parameters)");
        for (const OwnedGradient& u : owned) {
          const auto found = got.find(u.first);
          std::vector<float> g(u.want.size(), std::nanf(""));
          if (found != got.end()) {
            std::copy_n(found->second.begin(), std::min(g.size(), found->second.size()), g.begin());
          }
          out.record(found == got.end() ? int64_t{-1} : static_cast<int64_t>(found->second.size()));
          out.record_all(g.data(), g.size());
          if (found == got.end()) {
            ADD_FAILURE() << u.unit << " on " << who(r) << ": nothing named " << u.first
                          << " in optimized()"
                          << (zero ? " (a unit's shard is named by its first parameter)" : "");
            continue;
          }
          EXPECT_EQ(found->second.size(), u.want.size())
              << u.unit << " on " << who(r) << ": the elements of its gradient"
              << (zero ? " (its shard's real elements)" : "");
          const double e = gradient_error(g, u);
          if (!compares_gradients(c, step)) continue;
          EXPECT_LE(e, gradient_bar(c, step))
              << u.unit << " on " << who(r) << ": after step " << step + 1 << " the gradient "
              << (zero ? "of the rank's own chunk (" + std::to_string(u.want.size()) + " elements) "
                       : "")
              << "is off one process's by " << e
              << (zero ? " (relative L2 on the larger of its norm and its share of its unit's: "
                         "handout, Tolerances; revisit: "
                       : " (relative L2; revisit: ")
              << (step == 0
                      ? "the 1/m of each micro-batch, the DP average, the two halves of a tied "
                        "table (under TP, each TP rank's rows of it)" +
                            std::string(zero ? ", the units of F8" : "")
                      : "what a rank carries from one step into the next: where step 1's "
                        "gradient is right, step 2's backward did not start from zero")
              << ")";
        }
      }
    }
    for (const auto& [param, g] : ref.grads[0]) {
      EXPECT_EQ(holders.count(param), 1u) << "no rank holds " << param;
    }
  }
}

TEST(ProofStep, EachRankPeaksAtExactlyItsStagesShare) {
  const std::string name = "ProofStep.EachRankPeaksAtExactlyItsStagesShare";
  gtl::judge::Outputs out(name);
  for (const ProofCase& c : proof_cases(name)) {
    SCOPED_TRACE(c.name());
    const TwinRun run = run_twin(c);
    if (failed(run, c)) return;
    const int pp = c.config.pp;
    for (const RankRun& r : run.ranks) {
      out.record(r.stage);
      out.record(r.built);
      out.record_all(r.allocations.data(), r.allocations.size());
      const StagePieces p = stage_pieces(c, r.stage, r.dp_rank, r.tp_rank);
      const int64_t in_flight = std::min<int64_t>(pp - r.stage, c.config.accumulation);
      const int64_t expected = stage_share(c, p, r.stage), peak = peak_of(r.allocations, r.built);
      EXPECT_EQ(peak, expected)
          << who(r) << " peaked at " << peak << " bytes in its steps; its share is " << expected
          << " = " << p.built
          << (c.config.zero_stage >= 1
                  ? " (its units' padded buffers that persist, its shards, AdamW over them)"
                  : " (parameters, gradients, AdamW)")
          << " + " << p.one_micro_batch << " (one micro-batch's peak on this stage) + "
          << in_flight - 1 << " x " << p.held
          << " (each other micro-batch 1F1B holds here: min(pp - s, m) = " << in_flight
          << " in all). More: a micro-batch too many in flight, a tensor kept past its use "
             "(an input, an output already sent, a received gradient; under ZeRO-2 and -3 a "
             "unit's whole buffer outside F9's window), or one made before the call that first "
             "needs it (a receive buffer allocated before a forward adds to the forward's "
             "peak); less: something the header or F9 says a rank holds was dropped early";
    }
  }
}

TEST(ProofStep, TheTraceHoldsThePlansTrafficAndNothingElse) {
  const std::string name = "ProofStep.TheTraceHoldsThePlansTrafficAndNothingElse";
  gtl::judge::Outputs out(name);
  for (const ProofCase& c : proof_cases(name)) {
    SCOPED_TRACE(c.name());
    const TwinRun run = run_twin(c);
    if (failed(run, c)) return;
    std::vector<int64_t> parameters, padded;
    for (int s = 0; s < c.config.pp; ++s) {
      parameters.push_back(stage_parameter_count(c, s));
      padded.push_back(stage_padded_count(c, s));
    }
    for (std::size_t world_rank = 0; world_rank < run.ranks.size(); ++world_rank) {
      const RankRun& r = run.ranks[world_rank];
      const Traffic got = traffic_of(r.events, activation_bytes(c));
      const auto st = static_cast<std::size_t>(r.stage);
      const Traffic want =
          expected_traffic(c, static_cast<int>(world_rank), parameters[st], padded[st]);
      const std::vector<int64_t> flat = flatten(got);
      out.record(r.stage);
      out.record_all(flat.data(), flat.size());
      EXPECT_TRUE(got == want)
          << who(r) << " (world rank " << world_rank << "), over the two steps: the plan is "
          << describe(want) << "; the trace holds " << describe(got)
          << " (revisit: 1F1B sends each micro-batch's activation once and its gradient once; "
             "each gradient is combined in the group of the ranks holding it, once a step (under "
             "ZeRO-2 and -3 once a micro-batch: S6, F9), and only where the ranks' gradients "
             "differ (a parameter every TP rank holds whole gets the same one on each); ZeRO's "
             "values gathered once a step (ZeRO-1, -2) or before every forward and backward "
             "(ZeRO-3), under bf16 as the units' bf16 values (F8); the TP group's all-reduces "
             "(under SP all-gathers and reduce-scatters) are "
             "the core's layers' and loss's)";
    }
  }
}

// Given code (make_plan_rank's checks): what the twins cannot run is refused by name, before any
// rank communicates. Not a graded check: it holds for the starter too.
TEST(ProofGiven, RefusesWhatTheTwinCannotRunByName) {
  const ModelSpec model{4, 16, 2, 30, 8, true};
  auto refused = [&](Config c, const std::string& what, int world) {
    dist::RunOptions options;
    options.timeout = std::chrono::seconds(30);
    gtl::testing::expect_error_naming(
        [&] {
          dist::run_ranks(
              world,
              [&](dist::Communicator& comm) { lab11::make_plan_rank(model, 1, c, comm, kLr); },
              options);
        },
        {what}, lab11::describe(c));
  };
  Config heads;
  heads.tp = 4;
  heads.precision = lab11::Precision::Bf16Mixed;
  refused(heads, "tp 4 does not divide the 2 heads", 4);
  Config pp;
  pp.pp = 2;
  refused(pp, "a world of 3 ranks for dp 1 x tp 1 x pp 2", 3);
  Config tp;
  tp.tp = 2;
  refused(tp, "a world of 3 ranks for dp 1 x tp 2 x pp 1", 3);
}
