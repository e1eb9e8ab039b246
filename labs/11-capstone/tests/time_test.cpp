// TODO 2: the placement and the step time.
//   Placement  every factorisation dp x tp x pp of clusters of 1 to 4 nodes (2, 4 or 8 GPUs
//              each): validity, no link exactly for a group of one, nothing across nodes on
//              one node, TP never across nodes; the handout's worked placements (S7) link by
//              link. Every placement is recorded and the judge compares each link with its own
//              rank-by-rank enumeration.
//   StepTime   properties the handout states (the bubble in the per-DP-rank micro-batch count,
//              the global batch, the parts adding up, one GPU's MFU, which link the DP
//              synchronisation uses); every figure of seeded runs is recorded and the judge
//              recomputes it. Tolerance: 1e-12 relative (handout, "Step time": every figure is
//              a few dozen double operations on exact integers, so two correct orders of
//              evaluation agree to ~1e-14; a modelling mistake moves a figure by 1e-4 or more).
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "capstone.h"
#include "gtl/runtime/error.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab11_cases.h"

namespace lab11 {
namespace {

using lab11_cases::TimeCase;

constexpr double kRel = 1e-12;

std::string where(const ClusterSpec& cl, const ModelSpec& m, const Config& c) {
  return std::to_string(cl.nodes) + " node(s) of " + std::to_string(cl.gpus_per_node) + " GPUs, " +
         describe(m) + ", " + describe(c) + " (" + gtl::test_seed::describe() + ")";
}

bool close(double got, double want) {
  return std::fabs(got - want) <= kRel * std::fabs(want);
}

const char* name(Link l) {
  return l == Link::None ? "none" : l == Link::IntraNode ? "intra-node" : "inter-node";
}

void expect_placement(const ClusterSpec& cl, const Config& c, gtl::judge::Outputs& out) {
  const Placement p = place(cl, c);
  out.record(p.valid);
  out.record(static_cast<int>(p.tp));
  out.record(static_cast<int>(p.pp));
  out.record(static_cast<int>(p.dp));
  const int gpus = cl.nodes * cl.gpus_per_node;
  const std::string at = std::to_string(cl.nodes) + " node(s) of " +
                         std::to_string(cl.gpus_per_node) + ", " + describe(c);
  // TP groups are tp consecutive ranks starting at multiples of tp: each lies inside a node iff
  // tp divides the node's GPUs (when the grid uses every GPU).
  const bool want_valid = c.dp * c.tp * c.pp == gpus && cl.gpus_per_node % c.tp == 0;
  ASSERT_EQ(p.valid, want_valid) << at << ": valid must be " << want_valid
                                 << " (every GPU used, every TP group inside one node); reason "
                                 << "given: \"" << p.reason << "\"";
  if (!want_valid) {
    EXPECT_FALSE(p.reason.empty()) << at << ": an invalid placement says why";
    return;
  }
  const std::pair<const char*, std::pair<Link, int>> groups[3] = {
      {"TP", {p.tp, c.tp}}, {"the pipeline", {p.pp, c.pp}}, {"DP", {p.dp, c.dp}}};
  for (const auto& [group, link_size] : groups) {
    const auto& [link, size] = link_size;
    EXPECT_EQ(link == Link::None, size == 1)
        << at << ": " << group << "'s link is " << name(link) << " for a group of " << size
        << " (none exactly for a group of one)";
    if (cl.nodes == 1) {
      EXPECT_NE(link, Link::InterNode) << at << ": " << group << " crosses nodes on one node";
    }
  }
  EXPECT_NE(p.tp, Link::InterNode) << at << ": a valid placement keeps TP inside a node";
}

TEST(Placement, EveryGridOfClustersUpToFourNodesHasTheLinksItsGroupsSpan) {
  gtl::judge::Outputs out("Placement.EveryGridOfClustersUpToFourNodesHasTheLinksItsGroupsSpan");
  for (int nodes = 1; nodes <= 4; ++nodes)
    for (int gpn : {2, 4, 8}) {
      ClusterSpec cl;
      cl.nodes = nodes;
      cl.gpus_per_node = gpn;
      for (const Config& c : lab11_cases::grids(cl)) expect_placement(cl, c, out);
      for (int tp : {3, 6}) {  // TP groups that straddle nodes, or grids that leave GPUs idle
        Config c;
        c.tp = tp;
        c.dp = std::max(1, nodes * gpn / tp);
        expect_placement(cl, c, out);
      }
    }
}

// The handout's worked placements (S7), rank by rank.
TEST(Placement, TheHandoutsWorkedPlacements) {
  struct Worked {
    int nodes, gpus_per_node, dp, tp, pp;
    Link tp_link, pp_link, dp_link;
  };
  const Worked cases[] = {
      {2, 8, 2, 4, 2, Link::IntraNode, Link::IntraNode, Link::InterNode},
      {4, 2, 1, 2, 4, Link::IntraNode, Link::InterNode, Link::None},
      {2, 2, 1, 2, 2, Link::IntraNode, Link::InterNode, Link::None},
      {2, 4, 1, 1, 8, Link::None, Link::InterNode, Link::None},
      {2, 8, 8, 2, 1, Link::IntraNode, Link::None, Link::InterNode},
      {1, 8, 2, 2, 2, Link::IntraNode, Link::IntraNode, Link::IntraNode},
  };
  for (const Worked& w : cases) {
    ClusterSpec cl;
    cl.nodes = w.nodes;
    cl.gpus_per_node = w.gpus_per_node;
    Config c;
    c.dp = w.dp;
    c.tp = w.tp;
    c.pp = w.pp;
    const Placement p = place(cl, c);
    const std::string at = std::to_string(w.nodes) + " node(s) of " +
                           std::to_string(w.gpus_per_node) + ", " + describe(c) +
                           " (handout, S7's worked placements)";
    ASSERT_TRUE(p.valid) << at << ": valid; reason given: \"" << p.reason << "\"";
    EXPECT_EQ(p.tp, w.tp_link) << at << ": TP's link is " << name(p.tp) << ", expected "
                               << name(w.tp_link);
    EXPECT_EQ(p.pp, w.pp_link) << at << ": the pipeline's link is " << name(p.pp) << ", expected "
                               << name(w.pp_link) << " (a pipeline takes every tp-th rank)";
    EXPECT_EQ(p.dp, w.dp_link) << at << ": DP's link is " << name(p.dp) << ", expected "
                               << name(w.dp_link) << " (a DP group takes every (tp pp)-th rank)";
  }
}

TEST(Placement, ATpGroupAcrossNodesIsInvalidAndStepTimeRefusesIt) {
  ClusterSpec cl;
  cl.nodes = 2;
  cl.gpus_per_node = 8;
  Config c;
  c.tp = 16;
  ModelSpec m = lab11_cases::gpt2_small();
  m.heads = 16;
  m.dim = 1024;
  m.vocab = 50304;
  const Placement p = place(cl, c);
  EXPECT_FALSE(p.valid) << "tp 16 on nodes of 8 GPUs: the TP group spans two nodes";
  EXPECT_THROW(step_time(m, cl, c, 0.5), gtl::Error);
  c.tp = 8;
  c.dp = 1;  // 8 of 16 GPUs
  EXPECT_FALSE(place(cl, c).valid) << "dp x tp x pp = 8 on a cluster of 16";
}

void record(gtl::judge::Outputs& out, const StepTime& t) {
  for (double v : {t.compute_s, t.tp_comm_s, t.pp_comm_s, t.bubble_s, t.dp_comm_s, t.step_s,
                   t.tokens_per_s, t.mfu})
    out.record(v);
}

TEST(StepTime, BubbleIsPpMinusOneSlotsOfTheMicroBatchesOfOneDpRank) {
  const std::string test = "StepTime.BubbleIsPpMinusOneSlotsOfTheMicroBatchesOfOneDpRank";
  gtl::judge::Outputs out(test);
  for (const TimeCase& tc : lab11_cases::seeded_time_cases(test, 40)) {
    const StepTime t = step_time(tc.model, tc.cluster, tc.config, tc.mfu);
    record(out, t);
    const double busy = t.compute_s + t.tp_comm_s + t.pp_comm_s;
    const double want = (tc.config.pp - 1.0) / static_cast<double>(tc.config.accumulation);
    EXPECT_TRUE(close(t.bubble_s / busy, want))
        << where(tc.cluster, tc.model, tc.config)
        << ": bubble / (compute + TP + PP) = " << t.bubble_s / busy
        << ", expected (pp - 1) / m = " << want
        << " with m the micro-batches of ONE DP rank (accumulation), not of the global batch";
  }
}

TEST(StepTime, PartsAddUpAndTheGlobalBatchIsMicroTimesAccumulationTimesDp) {
  const std::string test = "StepTime.PartsAddUpAndTheGlobalBatchIsMicroTimesAccumulationTimesDp";
  gtl::judge::Outputs out(test);
  for (const TimeCase& tc : lab11_cases::seeded_time_cases(test, 40)) {
    const StepTime t = step_time(tc.model, tc.cluster, tc.config, tc.mfu);
    record(out, t);
    const std::string at = where(tc.cluster, tc.model, tc.config);
    const double sum = t.compute_s + t.tp_comm_s + t.pp_comm_s + t.bubble_s + t.dp_comm_s;
    EXPECT_TRUE(close(t.step_s, sum)) << at << ": step " << t.step_s << " s, parts " << sum;
    const double tokens = static_cast<double>(tc.config.micro_batch * tc.config.accumulation *
                                              tc.config.dp * tc.model.context);
    EXPECT_TRUE(close(t.tokens_per_s * t.step_s, tokens))
        << at << ": tokens/s x step = " << t.tokens_per_s * t.step_s
        << ", the global batch is micro-batch x accumulation x dp x T = " << tokens;
    const double gpus = tc.config.dp * tc.config.tp * tc.config.pp;
    EXPECT_TRUE(close(
        t.mfu, model_flops_per_token(tc.model) * t.tokens_per_s / (gpus * tc.cluster.peak_flops)))
        << at << ": the run's MFU is the model's FLOPs (6N + 12LTD per token) per second over "
        << "every GPU's peak";
    EXPECT_EQ(t.tp_comm_s > 0, tc.config.tp > 1) << at << ": TP traffic iff tp > 1";
    EXPECT_EQ(t.pp_comm_s > 0, tc.config.pp > 1) << at << ": sends iff pp > 1";
    EXPECT_EQ(t.dp_comm_s > 0, tc.config.dp > 1) << at << ": DP traffic iff dp > 1";
  }
}

TEST(StepTime, OneGpuRunsAtTheAchievedMfu) {
  gtl::judge::Outputs out("StepTime.OneGpuRunsAtTheAchievedMfu");
  ClusterSpec cl;
  cl.gpus_per_node = 1;
  for (const ModelSpec& m : {lab11_cases::gpt2_small(), ModelSpec{2, 64, 4, 256, 64, false}}) {
    Config c;
    c.micro_batch = 3;
    c.accumulation = 5;
    const StepTime t = step_time(m, cl, c, 0.4);
    record(out, t);
    EXPECT_TRUE(close(t.mfu, 0.4))
        << describe(m) << ": one GPU, no communication, no "
        << "recomputation: the run's MFU " << t.mfu << " must be the achieved 0.4";
    c.activation_checkpointing = true;
    const StepTime ck = step_time(m, cl, c, 0.4);
    record(out, ck);
    EXPECT_LT(ck.mfu, 0.4) << describe(m) << ": recomputation is work the model FLOPs do not "
                           << "count";
  }
}

TEST(StepTime, DpSynchronisationCrossesTheLinkItsGroupSpans) {
  const std::string test = "StepTime.DpSynchronisationCrossesTheLinkItsGroupSpans";
  gtl::judge::Outputs out(test);
  for (TimeCase tc : lab11_cases::seeded_time_cases(test, 30)) {
    const StepTime a = step_time(tc.model, tc.cluster, tc.config, tc.mfu);
    tc.cluster.inter_node_bytes_per_s *= 2;
    const StepTime b = step_time(tc.model, tc.cluster, tc.config, tc.mfu);
    record(out, a);
    record(out, b);
    if (tc.config.dp < 2) continue;
    const bool across = tc.cluster.nodes > 1;
    const std::string at = where(tc.cluster, tc.model, tc.config);
    if (across) {
      EXPECT_TRUE(close(b.dp_comm_s * 2, a.dp_comm_s))
          << at << ": the DP group spans nodes, so twice the InfiniBand bandwidth halves its time";
    } else {
      EXPECT_TRUE(close(b.dp_comm_s, a.dp_comm_s))
          << at << ": the DP group is inside one node: InfiniBand does not carry it";
    }
  }
}

}  // namespace
}  // namespace lab11
