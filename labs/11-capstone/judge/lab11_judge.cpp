// The judge of lab 11 (docs/grader.md, "The judge"): built from the course alone (the lab's
// header, its given checks, the tests' shared inputs and the judge's reference model and answers),
// never from the student's files. gtl-grade runs `lab11_judge <check>` after the check's tests;
// each case reads what those tests recorded for the inputs the grading seed drew and recomputes
// it here:
//   memory-anchor  every stage count and category at the anchor shapes, from the reference model
//                  (lab11_reference.h, itself checked against the core's allocator at the same
//                  shapes by lab11_reference_test)
//   memory-model   every breakdown of the seeded sweeps, exactly, from the reference model
//   placement      every placement, from a rank-by-rank enumeration (lab11_answers.h)
//   step-time      every figure of StepTime, from the reference (1e-12 relative, the handout's)
//   search-space   every candidate list, from a brute force over a superset (lab11_answers.h)
//   search-choice  every choice, from the brute-force choice over the brute-force space
//   report-table   every line of every table, from the plan's Pareto front (lab11_answers.h)
//   report-svg     every line of every SVG, from the lines capstone.h specifies
//   proof-loss     every loss and step-1 gradient of every twin rank, from one process training
//                  the core's GPT (the handout's bars); every copy of a parameter the same
//   proof-memory   every rank's peak, derived from its allocation events, against its stage's
//                  share measured on the core's GPTStage
//   proof-traffic  every rank's summed traffic, against the plan's
#include <cmath>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "capstone.h"
#include "gtl_judge.h"
#include "lab11_answers.h"
#include "lab11_cases.h"
#include "lab11_proof_cases.h"
#include "lab11_reference.h"

namespace {

using gtl::judge::Recorded;
using gtl::judge::Rejection;
using gtl::judge::show;
using lab11::Config;
using lab11::MemoryBreakdown;
using lab11::ModelSpec;
using lab11_cases::SweepCase;

// Reads one breakdown recorded by the tests' record() and rejects it unless it is the reference's.
void expect_breakdown(Recorded& r, const ModelSpec& m, const Config& c, int stage) {
  const MemoryBreakdown want = lab11_reference::stage_memory(m, c, stage);
  const std::string at =
      lab11::describe(m) + ", " + lab11::describe(c) + ", stage " + std::to_string(stage);
  const auto check = [&](const char* what, int64_t w) {
    const auto got = r.next<int64_t>(std::string(what) + " of " + at);
    if (got != w)
      throw Rejection(r.test() + ": " + what + " of " + at + ": the student's model gives " +
                      show(got) + " bytes, the judge computes " + show(w));
  };
  const auto got_stage = r.next<int>("the stage of " + at);
  if (got_stage != stage)
    throw Rejection(r.test() + ": " + at + ": the breakdown names stage " + show(got_stage));
  check("parameters", want.parameters);
  check("gradients", want.gradients);
  check("optimizer", want.optimizer);
  check("activations", want.activations);
  check("other", want.other);
}

void expect_count(Recorded& r, const ModelSpec& m, const Config& c, int stage) {
  const int64_t want = lab11_reference::stage_parameters(m, c, stage);
  const auto got = r.next<int64_t>("the parameters of stage " + std::to_string(stage));
  if (got != want)
    throw Rejection(r.test() + ": " + lab11::describe(m) + ", " + lab11::describe(c) + ", stage " +
                    std::to_string(stage) + ": the student's stage_parameters gives " + show(got) +
                    ", the judge computes " + show(want));
}

void anchor_cases(const std::string& test, const std::vector<lab11_cases::AnchorCase>& cases) {
  Recorded r(test);
  for (const auto& a : cases) {
    Config c;
    c.micro_batch = a.batch;
    c.activation_checkpointing = a.checkpoint;
    expect_count(r, a.model, c, 0);
    expect_breakdown(r, a.model, c, 0);
  }
}

std::string memory_anchor() {
  anchor_cases("MemoryAnchor.EveryCategoryEqualsTheCoresAllocatorAtFixedShapes",
               lab11_cases::fixed_anchor_cases());
  const std::string seeded = "MemoryAnchor.EveryCategoryEqualsTheCoresAllocatorAtSeededShapes";
  anchor_cases(seeded, lab11_cases::seeded_anchor_cases(seeded));
  {
    const std::string bf16 = "MemoryAnchor.Bf16EveryCategoryEqualsTheCoresAllocator";
    Recorded r(bf16);
    std::vector<lab11_cases::AnchorCase> cases = lab11_cases::fixed_anchor_cases();
    for (const auto& a : lab11_cases::seeded_anchor_cases(bf16)) cases.push_back(a);
    for (const auto& a : cases) {
      for (int micro_batches : {1, 2}) {
        Config c;
        c.micro_batch = a.batch;
        c.activation_checkpointing = a.checkpoint;
        c.precision = lab11::Precision::Bf16Mixed;
        c.accumulation = micro_batches;
        expect_breakdown(r, a.model, c, 0);
      }
    }
  }
  return "every category at every anchor shape the reference's (the core's allocator's)";
}

std::string memory_model() {
  {
    const std::string name = "MemoryModel.StagesHoldEachParameterOnceAndTheEmbeddingsOnlyAtTheEnds";
    Recorded r(name);
    for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 40)) {
      Config c = s.config;
      c.tp = 1;
      for (int st = 0; st < c.pp; ++st) expect_count(r, s.model, c, st);
    }
  }
  {
    const std::string name = "MemoryModel.ZeroShardsOptimizerThenGradientsThenParameters";
    Recorded r(name);
    for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 30)) {
      Config c = s.config;
      c.dp = std::max(c.dp, 2);
      for (int z = 0; z <= 3; ++z) {
        c.zero_stage = z;
        expect_breakdown(r, s.model, c, 0);
      }
    }
  }
  {
    const std::string name = "MemoryModel.TensorAndSequenceParallelismDivideWhatLab08Divides";
    Recorded r(name);
    for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 30)) {
      Config c = s.config;
      c.activation_checkpointing = false;
      c.tp = 1;
      c.sequence_parallel = false;
      expect_breakdown(r, s.model, c, 0);
      c.sequence_parallel = true;
      expect_breakdown(r, s.model, c, 0);
      int k = 0;
      for (int cand : {4, 3, 2}) {
        if (k == 0 && s.model.heads % cand == 0 && s.model.vocab % cand == 0 &&
            s.model.context % cand == 0) {
          k = cand;
        }
      }
      if (k == 0) continue;
      c.tp = k;
      c.sequence_parallel = false;
      expect_breakdown(r, s.model, c, 0);
      c.sequence_parallel = true;
      expect_breakdown(r, s.model, c, 0);
    }
  }
  {
    const std::string name = "MemoryModel.OneFOneBHoldsAtMostPpMinusSMicroBatches";
    Recorded r(name);
    for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 30)) {
      Config c = s.config;
      c.pp = static_cast<int>(std::max<int64_t>(2, std::min<int64_t>(c.pp, s.model.layers)));
      if (s.model.layers % c.pp != 0) c.pp = 1;
      c.accumulation = c.pp;
      expect_breakdown(r, s.model, c, 0);
      c.accumulation = 4 * c.pp + 3;
      expect_breakdown(r, s.model, c, 0);
      for (int st = 0; st < c.pp; ++st) expect_breakdown(r, s.model, c, st);
    }
  }
  {
    const std::string name = "MemoryModel.SeededConfigurationsEveryStage";
    Recorded r(name);
    for (const SweepCase& s : lab11_cases::seeded_sweep_cases(name, 60))
      for (int st = 0; st < s.config.pp; ++st) expect_breakdown(r, s.model, s.config, st);
  }
  return "every breakdown of the seeded sweeps the reference's";
}

// ---- TODO 2 ------------------------------------------------------------------------------------

void expect_placement(Recorded& r, const lab11::ClusterSpec& cl, const Config& c) {
  const auto want = lab11_answers::brute_force_placement(cl, c);
  const std::string at = std::to_string(cl.nodes) + " node(s) of " +
                         std::to_string(cl.gpus_per_node) + ", " + lab11::describe(c);
  const auto valid = r.next<int>("valid of " + at);
  if ((valid != 0) != want.valid)
    throw Rejection(r.test() + ": " + at + ": valid " + show(valid) + ", the judge finds " +
                    show(want.valid));
  const int links[3] = {r.next<int>("tp link of " + at), r.next<int>("pp link of " + at),
                        r.next<int>("dp link of " + at)};
  if (!want.valid) return;
  const int wants[3] = {static_cast<int>(want.tp), static_cast<int>(want.pp),
                        static_cast<int>(want.dp)};
  const char* names[3] = {"TP", "PP", "DP"};
  for (int i = 0; i < 3; ++i)
    if (links[i] != wants[i])
      throw Rejection(r.test() + ": " + at + ": " + names[i] + "'s link " + show(links[i]) +
                      ", the judge finds " + show(wants[i]) + " (0 none, 1 intra, 2 inter)");
}

std::string placement() {
  Recorded r("Placement.EveryGridOfClustersUpToFourNodesHasTheLinksItsGroupsSpan");
  for (int nodes = 1; nodes <= 4; ++nodes)
    for (int gpn : {2, 4, 8}) {
      lab11::ClusterSpec cl;
      cl.nodes = nodes;
      cl.gpus_per_node = gpn;
      for (const Config& c : lab11_cases::grids(cl)) expect_placement(r, cl, c);
      for (int tp : {3, 6}) {
        Config c;
        c.tp = tp;
        c.dp = std::max(1, nodes * gpn / tp);
        expect_placement(r, cl, c);
      }
    }
  return "every placement the rank-by-rank enumeration's";
}

// 1e-12 relative: the handout's "Step time" tolerance.
void expect_time(Recorded& r, const ModelSpec& m, const lab11::ClusterSpec& cl, const Config& c,
                 double mfu) {
  const lab11::StepTime w = lab11_reference::step_time(m, cl, c, mfu);
  const std::string at = std::to_string(cl.nodes) + " node(s) of " +
                         std::to_string(cl.gpus_per_node) + ", " + lab11::describe(m) + ", " +
                         lab11::describe(c);
  const double want[8] = {w.compute_s, w.tp_comm_s, w.pp_comm_s,    w.bubble_s,
                          w.dp_comm_s, w.step_s,    w.tokens_per_s, w.mfu};
  const char* names[8] = {"compute_s", "tp_comm_s", "pp_comm_s",    "bubble_s",
                          "dp_comm_s", "step_s",    "tokens_per_s", "mfu"};
  for (int i = 0; i < 8; ++i) {
    const auto got = r.next<double>(std::string(names[i]) + " of " + at);
    if (!(std::fabs(got - want[i]) <= 1e-12 * std::fabs(want[i])))
      throw Rejection(r.test() + ": " + names[i] + " of " + at + ": the student's model gives " +
                      show(got) + ", the judge computes " + show(want[i]));
  }
}

std::string step_time_check() {
  for (const std::string name :
       {"StepTime.BubbleIsPpMinusOneSlotsOfTheMicroBatchesOfOneDpRank",
        "StepTime.PartsAddUpAndTheGlobalBatchIsMicroTimesAccumulationTimesDp"}) {
    Recorded r(name);
    for (const auto& tc : lab11_cases::seeded_time_cases(name, 40))
      expect_time(r, tc.model, tc.cluster, tc.config, tc.mfu);
  }
  {
    Recorded r("StepTime.OneGpuRunsAtTheAchievedMfu");
    lab11::ClusterSpec cl;
    cl.gpus_per_node = 1;
    for (const ModelSpec& m : {lab11_cases::gpt2_small(), ModelSpec{2, 64, 4, 256, 64, false}}) {
      Config c;
      c.micro_batch = 3;
      c.accumulation = 5;
      expect_time(r, m, cl, c, 0.4);
      c.activation_checkpointing = true;
      expect_time(r, m, cl, c, 0.4);
    }
  }
  {
    const std::string name = "StepTime.DpSynchronisationCrossesTheLinkItsGroupSpans";
    Recorded r(name);
    for (auto tc : lab11_cases::seeded_time_cases(name, 30)) {
      expect_time(r, tc.model, tc.cluster, tc.config, tc.mfu);
      tc.cluster.inter_node_bytes_per_s *= 2;
      expect_time(r, tc.model, tc.cluster, tc.config, tc.mfu);
    }
  }
  return "every step time the reference's within 1e-12";
}

// ---- TODO 3 ------------------------------------------------------------------------------------

void expect_config(Recorded& r, const Config& want, const std::string& what) {
  const int64_t w[9] = {want.dp,
                        want.tp,
                        want.pp,
                        want.zero_stage,
                        want.sequence_parallel,
                        want.micro_batch,
                        want.accumulation,
                        want.activation_checkpointing,
                        want.precision == lab11::Precision::Fp32};
  const char* names[9] = {"dp",
                          "tp",
                          "pp",
                          "zero_stage",
                          "sequence_parallel",
                          "micro_batch",
                          "accumulation",
                          "activation_checkpointing",
                          "precision"};
  for (int i = 0; i < 9; ++i) {
    const auto got = r.next<int64_t>(std::string(names[i]) + " of " + what);
    if (got != w[i])
      throw Rejection(r.test() + ": " + what + ": " + names[i] + " " + show(got) +
                      ", the judge's is " + show(w[i]) + " (" + lab11::describe(want) + ")");
  }
}

std::string search_space() {
  const std::string name = "Search.SpaceIsEveryRunnableTupleInOrder";
  Recorded r(name);
  for (const auto& s : lab11_cases::seeded_search_cases(name, 40)) {
    const auto want = lab11_answers::brute_force_space(s.model, s.cluster, s.request);
    const std::string at = lab11::describe(s.model) + ", " + std::to_string(s.cluster.nodes) +
                           " x " + std::to_string(s.cluster.gpus_per_node) + " GPUs";
    const auto n = r.next<std::size_t>("the number of candidates of " + at);
    if (n != want.size())
      throw Rejection(name + ": " + at + ": " + show(n) + " candidates, the judge's space has " +
                      show(want.size()));
    for (std::size_t i = 0; i < n; ++i) {
      expect_config(r, want[i], at + ", candidate " + std::to_string(i));
      const auto fits = r.next<int>("fits of candidate " + std::to_string(i));
      const bool w = s.pricing.memory(want[i]) <= s.cluster.gpu_memory_bytes;
      if ((fits != 0) != w)
        throw Rejection(name + ": " + at + ", candidate " + std::to_string(i) + ": fits " +
                        show(fits) + ", the judge's " + show(w));
    }
  }
  return "every space the brute force's, in order";
}

std::string search_choice() {
  const std::string name = "Search.BestIsTheFastestThatFitsTiesByMemoryThenOrder";
  Recorded r(name);
  for (const auto& s : lab11_cases::seeded_search_cases(name, 60)) {
    const std::vector<lab11::Candidate> cands = lab11_answers::priced_space(s);
    const int best = lab11_answers::brute_force_best(cands);
    const std::string at = lab11::describe(s.model) + ", " + std::to_string(s.cluster.nodes) +
                           " x " + std::to_string(s.cluster.gpus_per_node) + " GPUs";
    const auto feasible = r.next<int>("feasible of " + at);
    if ((feasible != 0) != (best >= 0))
      throw Rejection(name + ": " + at + ": feasible " + show(feasible) + ", the judge's " +
                      show(best >= 0));
    expect_config(r, best >= 0 ? cands[static_cast<std::size_t>(best)].config : Config{},
                  at + ", the best");
  }
  {
    Recorded refuses("Search.RefusesAnEmptyBatchAndAnswersInfeasibleWithoutThrowing");
    if (refuses.next<int>("whether a batch of 0 tokens threw") != 1)
      throw Rejection(refuses.test() + ": a batch of 0 tokens did not throw gtl::Error");
    if (refuses.next<int>("feasible where nothing fits") != 0)
      throw Rejection(refuses.test() + ": feasible where nothing fits");
  }
  return "every choice the brute force's";
}

// ---- TODO 4 ------------------------------------------------------------------------------------

// Whether two lines differ only in numbers printed with two decimals ("%.2f"), each by at most
// one unit of that last digit: two correct computations of one SVG height (a running sum, or
// 420 - 400 x the cumulative bytes / top) may round a value that lies on a tie apart.
bool same_but_last_digits(const std::string& got, const std::string& want) {
  static const std::regex number(R"(-?[0-9]+\.[0-9]{2}(?![0-9]))");
  std::smatch a, b;
  std::string x = got, y = want;
  while (std::regex_search(x, a, number) && std::regex_search(y, b, number)) {
    if (a.prefix().str() != b.prefix().str()) return false;
    if (std::fabs(std::stod(a.str()) - std::stod(b.str())) > 0.0100001) return false;
    x = a.suffix().str();
    y = b.suffix().str();
  }
  return x == y;
}

void expect_lines(Recorded& r, const std::vector<std::string>& want, const std::string& what,
                  bool last_digit_ties = false) {
  const auto n = r.next<std::size_t>("the number of lines of " + what);
  if (n != want.size())
    throw Rejection(r.test() + ": " + what + ": " + show(n) + " lines, the judge's " +
                    show(want.size()));
  for (std::size_t i = 0; i < n; ++i) {
    const std::string got = r.line("line " + std::to_string(i + 1) + " of " + what);
    if (got != want[i] && !(last_digit_ties && same_but_last_digits(got, want[i])))
      throw Rejection(r.test() + ": " + what + ", line " + std::to_string(i + 1) + ": \"" + got +
                      "\", the judge's \"" + want[i] + "\"");
  }
}

std::string report_table() {
  const std::string name = "Report.TableListsTheParetoFrontFastestFirst";
  Recorded r(name);
  std::mt19937_64 g = gtl::test_seed::generator(name + " rows");
  for (const lab11::Plan& plan : lab11_cases::seeded_plans(name, 80)) {
    const int rows = static_cast<int>(gtl::test_seed::draw(g, 1, 12));
    if (r.next<int>("the rows asked for") != rows)
      throw Rejection(name + ": the rows recorded are not the seed's");
    expect_lines(r, lab11_answers::expected_table(plan, rows),
                 "the table of " + std::to_string(plan.candidates.size()) + " candidates");
  }
  return "every table the judge's Pareto front";
}

std::string report_svg() {
  const std::string name = "Report.SvgStacksTheCategoriesToScaleUnderTheLimit";
  Recorded r(name);
  for (const auto& [m, gpu] : lab11_cases::seeded_breakdowns(name, 30))
    expect_lines(r, lab11_answers::expected_svg(m, gpu), "an SVG of " + show(m.total()) + " bytes",
                 true);
  return "every SVG the judge's";
}

// ---- TODO 5: the proof -------------------------------------------------------------------------
//
// The twins' recorded outputs against what the judge computes from the course alone: one process
// training the core's GPT (proof-loss: both steps' gradients; under ZeRO each unit's own chunk),
// the shares measured on the core's GPTStage and F8's FlatParameters (proof-memory), the plan's
// messages (proof-traffic).
using lab11_proof_cases::ProofCase;

std::string proof_loss() {
  const std::string test = "ProofStep.TrainsAsOneProcessOnTheWholeBatch";
  Recorded r(test);
  for (const ProofCase& c : lab11_proof_cases::proof_cases(test)) {
    const lab11_proof_cases::OneProcess ref = lab11_proof_cases::one_process(c);
    const int pp = c.config.pp, world = c.config.dp * c.config.tp * pp;
    double sums[2] = {0, 0}, tp0[2] = {0, 0};  // tp0: TP rank 0's loss of the DP rank at hand
    std::map<std::string, uint64_t> copies;    // each parameter's (ZeRO-3: shard's) digest, step 2
    std::set<std::string> held;                // the parameters some rank holds
    for (int rank = 0; rank < world; ++rank) {
      const std::string at = c.name() + ", world rank " + std::to_string(rank);
      const lab11_proof_cases::Position pos = lab11_proof_cases::position(c, rank);
      if (r.next<int>("the stage of " + at) != pos.stage)
        throw Rejection(test + ": " + at + ": the recorded stage is not the process grid's");
      for (int step = 0; step < 2; ++step) {
        const double loss = r.next<double>("a loss of " + at);
        if (pos.stage == pp - 1 && pos.tp_rank == 0) {
          sums[step] += loss;
          tp0[step] = loss;
        } else if (pos.stage == pp - 1) {
          if (!std::isnan(tp0[step]) && !(loss == tp0[step]))
            throw Rejection(test + ": " + at + " returned the loss " + show(loss) +
                            ", its TP rank 0 " + show(tp0[step]));
        } else if (!std::isnan(loss)) {
          throw Rejection(test + ": " + at + " is not on the last stage and returned a loss " +
                          show(loss));
        }
      }
      const auto n = r.next<std::size_t>("the parameter count of " + at);
      for (std::size_t i = 0; i < n; ++i) {
        const std::string param = r.next<std::string>("a parameter's name on " + at);
        if (ref.grads[0].count(param) == 0)
          throw Rejection(test + ": " + at + " holds " + param + ", which the GPT has not");
        held.insert(param);
      }
      const auto values = r.next<std::size_t>("the count of values of " + at);
      for (std::size_t i = 0; i < values; ++i) {
        const std::string copy = r.next<std::string>("a value's name on " + at);
        const auto digest = r.next<uint64_t>("the value of " + copy + " on " + at);
        const auto [found, first] = copies.emplace(copy, digest);
        if (!first && found->second != digest)
          throw Rejection(test + ": " + at + ": its copy of " + copy +
                          " differs from another rank's after step 2");
      }
      for (int step = 0; step < 2; ++step) {
        std::vector<lab11_proof_cases::OwnedGradient> owned;
        try {
          owned = lab11_proof_cases::owned_gradients(c, pos.stage, pos.dp_rank, ref.grads[step],
                                                     pos.tp_rank);
        } catch (const std::out_of_range&) {
          throw Rejection(test + ": " + at + " does not hold every parameter of its stage");
        }
        if (r.next<std::size_t>("the optimized count of " + at) != owned.size())
          throw Rejection(test + ": " + at + " does not optimize what its stage holds (F8)");
        for (const lab11_proof_cases::OwnedGradient& u : owned) {
          const auto size = r.next<int64_t>("the size of " + u.unit + " on " + at);
          const std::vector<float> g =
              r.sequence<float>("the gradient of " + u.unit + " on " + at, u.want.size());
          const double e = lab11_proof_cases::gradient_error(g, u);
          // (bf16's step 2: not compared, lab11_proof_cases.h)
          if (size != static_cast<int64_t>(u.want.size()) ||
              (lab11_proof_cases::compares_gradients(c, step) &&
               !(e <= lab11_proof_cases::gradient_bar(c, step))))
            throw Rejection(test + ": " + at + ": the gradient of " + u.unit + " after step " +
                            show(step + 1) + " is off one process's by " + show(e) +
                            " (relative L2 on at least its share of the unit's norm, " +
                            show(size) + " elements), above " +
                            show(lab11_proof_cases::gradient_bar(c, step)));
        }
      }
    }
    if (held.size() != ref.grads[0].size())
      throw Rejection(test + ": " + c.name() + ": the ranks hold " + show(held.size()) +
                      " of the GPT's " + show(ref.grads[0].size()) + " parameters");
    for (int step = 0; step < 2; ++step) {
      const double mean = sums[step] / c.config.dp;
      if (!(std::fabs(mean - ref.loss[step]) <=
            lab11_proof_cases::loss_bar(c, step) * std::fabs(ref.loss[step])))
        throw Rejection(test + ": " + c.name() + ": the DP ranks' mean loss of step " +
                        show(step + 1) + " is " + show(mean) + ", one process's " +
                        show(ref.loss[step]));
    }
  }
  return "";
}

std::string proof_memory() {
  const std::string test = "ProofStep.EachRankPeaksAtExactlyItsStagesShare";
  Recorded r(test);
  for (const ProofCase& c : lab11_proof_cases::proof_cases(test)) {
    for (int rank = 0; rank < c.config.dp * c.config.tp * c.config.pp; ++rank) {
      const std::string at = c.name() + ", world rank " + std::to_string(rank);
      const lab11_proof_cases::Position pos = lab11_proof_cases::position(c, rank);
      if (r.next<int>("the stage of " + at) != pos.stage)
        throw Rejection(test + ": " + at + ": the recorded stage is not the process grid's");
      const auto built = r.next<int64_t>("what " + at + " holds once built");
      const int64_t peak = r.peak_of_events("the allocations of " + at, built);
      const int64_t share = lab11_proof_cases::stage_share(
          c, lab11_proof_cases::stage_pieces(c, pos.stage, pos.dp_rank, pos.tp_rank), pos.stage);
      if (peak != share)
        throw Rejection(test + ": " + at + ": its allocations peak at " + show(peak) +
                        " bytes, its stage's share is " + show(share));
    }
  }
  return "";
}

std::string proof_traffic() {
  const std::string test = "ProofStep.TheTraceHoldsThePlansTrafficAndNothingElse";
  Recorded r(test);
  for (const ProofCase& c : lab11_proof_cases::proof_cases(test)) {
    const int pp = c.config.pp;
    std::vector<int64_t> parameters, padded;
    for (int s = 0; s < pp; ++s) {
      parameters.push_back(lab11_proof_cases::stage_parameter_count(c, s));
      padded.push_back(lab11_proof_cases::stage_padded_count(c, s));
    }
    for (int rank = 0; rank < c.config.dp * c.config.tp * pp; ++rank) {
      const std::string at = c.name() + ", world rank " + std::to_string(rank);
      const auto stage = static_cast<std::size_t>(lab11_proof_cases::position(c, rank).stage);
      if (r.next<int>("the stage of " + at) != static_cast<int>(stage))
        throw Rejection(test + ": " + at + ": the recorded stage is not the process grid's");
      const std::vector<int64_t> want = lab11_proof_cases::flatten(
          lab11_proof_cases::expected_traffic(c, rank, parameters[stage], padded[stage]));
      if (r.sequence<int64_t>("the traffic of " + at, want.size()) != want)
        throw Rejection(test + ": " + at + ": its traffic is not the plan's");
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(argc, argv,
                         {{"memory-anchor", memory_anchor},
                          {"memory-model", memory_model},
                          {"placement", placement},
                          {"step-time", step_time_check},
                          {"search-space", search_space},
                          {"search-choice", search_choice},
                          {"report-table", report_table},
                          {"report-svg", report_svg},
                          {"proof-loss", proof_loss},
                          {"proof-memory", proof_memory},
                          {"proof-traffic", proof_traffic}});
}
