// TODO 5: data x tensor parallelism on a grid of dp x tp in-process ranks, in the core's
// deterministic mode. 5a: each rank's TP and DP groups, against the layout of the core's
// ProcessGrid, and the refusal of a TP size the world cannot hold. 5b: the gradient
// synchronisation of one step, given every rank's micro-batch gradients (lab08_cases.h,
// local_gradients) and the core's ProcessGrid groups (so that 5b's checks never depend on 5a):
// against one process on the whole batch within the derived bound, bit for bit the same on the
// ranks that must agree, and the exact bytes of every collective in the group it must run in.
// Every call into the student's TODO 5 runs inside its guard scope (lab08_student_call.h), where
// the core's ProcessGrid refuses to run; the ProcessGrids the checks compare with or hand to 5b
// are built outside it, behind a barrier of the world (the scopes are process-wide).
#include <gtest/gtest.h>

#include <regex>

#include "gtl/distributed/process_grid.h"
#include "gtl_judge_output.h"
#include "lab08_cases.h"
#include "lab08_student_call.h"
#include "lab08_test_util.h"
#include "tensor_parallel.h"

namespace {

using namespace lab08;
using namespace lab08::testing;
using lab08_cases::Case;
using lab08_cases::Grid;
using lab08_cases::kSpDim;

std::string members_str(const std::vector<int>& m) {
  std::string s = "{";
  for (std::size_t i = 0; i < m.size(); ++i) s += (i ? ", " : "") + std::to_string(m[i]);
  return s + "}";
}
// The world ranks of a group, in its rank order: an all-gather of every member's world rank.
std::vector<int> members_of(Communicator& group, int world_rank) {
  Tensor me = Tensor::full({1}, float(world_rank));
  Tensor all = Tensor::zeros({group.world_size()});
  group.all_gather(me, all);
  std::vector<int> m;
  for (float v : all.to_vector()) m.push_back(static_cast<int>(v));
  return m;
}

// ---- 5a: the groups ----------------------------------------------------------------------------

// Every rank of each grid (and of 2 x 4, 1 x 4, 4 x 1): its coordinates and the members of its two
// groups, in rank order, against the core's ProcessGrid(world, tp, 1, dp) on the same world.
TEST(DataTensorParallel, GroupsAreTheProcessGridsGroups) {
  gtl::judge::Outputs out("DataTensorParallel.GroupsAreTheProcessGridsGroups");
  std::vector<Grid> grids = lab08_cases::kGrids;
  for (const Grid& g : std::vector<Grid>{{2, 4}, {1, 4}, {4, 1}}) grids.push_back(g);
  for (const Grid& g : grids) {
    const auto n = static_cast<std::size_t>(g.world());
    std::vector<int> tp_rank(n, -1), dp_rank(n, -1), tp_in(n, -1), dp_in(n, -1);
    std::vector<std::vector<int>> tp_got(n), dp_got(n), tp_grid(n), dp_grid(n);
    run_tp(g.world(), [&](Communicator& world) {
      const auto w = std::size_t(world.rank());
      {
        const auto call = lab08_student_call::todo5();
        const DpTpGroups mine = make_dp_tp_groups(world, g.tp);
        tp_rank[w] = mine.tp_rank, dp_rank[w] = mine.dp_rank;
        GTL_CHECK(mine.tp != nullptr && mine.dp != nullptr, "make_dp_tp_groups left a group empty");
        tp_in[w] = mine.tp->rank(), dp_in[w] = mine.dp->rank();
        tp_got[w] = members_of(*mine.tp, world.rank());
        dp_got[w] = members_of(*mine.dp, world.rank());
      }
      world.barrier();  // every rank's scope has ended: the core's grid may run
      const gtl::dist::ProcessGrid grid(world, g.tp, 1, g.dp);
      tp_grid[w] = members_of(grid.tp_group(), world.rank());
      dp_grid[w] = members_of(grid.dp_group(), world.rank());
    });
    for (int w = 0; w < g.world(); ++w) {
      const auto i = std::size_t(w);
      const std::string who = g.str() + ", world rank " + std::to_string(w);
      const bool ok = tp_rank[i] == w % g.tp && dp_rank[i] == w / g.tp && tp_in[i] == w % g.tp &&
                      dp_in[i] == w / g.tp && tp_got[i] == tp_grid[i] && dp_got[i] == dp_grid[i] &&
                      tp_got[i] == lab08_cases::tp_members(g, w) &&
                      dp_got[i] == lab08_cases::dp_members(g, w);
      out.record(tp_rank[i]), out.record(dp_rank[i]), out.record(tp_in[i]), out.record(dp_in[i]);
      out.record_all(tp_got[i]), out.record_all(dp_got[i]);
      EXPECT_TRUE(ok) << who << ": expected tp_rank " << w % g.tp << ", dp_rank " << w / g.tp
                      << ", TP group " << members_str(tp_grid[i]) << " and DP group "
                      << members_str(dp_grid[i]) << " (the core's ProcessGrid), this rank "
                      << w % g.tp << " and " << w / g.tp << " in them; got tp_rank " << tp_rank[i]
                      << ", dp_rank " << dp_rank[i] << ", TP group " << members_str(tp_got[i])
                      << " (rank " << tp_in[i] << " in it), DP group " << members_str(dp_got[i])
                      << " (rank " << dp_in[i]
                      << "). Revisit 5a: TP is innermost, its ranks are neighbours; a split's "
                         "color is what a group shares, its key orders the group";
    }
  }
}

// A TP size that does not divide the world (4 on 6 ranks, 3 on 4, 3 on 8): every rank throws a
// gtl::Error naming both numbers before any split (a collective: a rank that split alone waits).
TEST(DataTensorParallel, GroupsRefuseATpSizeTheWorldCannotHold) {
  gtl::judge::Outputs out("DataTensorParallel.GroupsRefuseATpSizeTheWorldCannotHold");
  for (const auto& [world_size, tp] : std::vector<std::pair<int, int>>{{6, 4}, {4, 3}, {8, 3}}) {
    std::vector<std::string> messages(static_cast<std::size_t>(world_size));
    std::vector<std::size_t> events(static_cast<std::size_t>(world_size));
    run_tp(world_size, [&](Communicator& world) {
      const auto w = std::size_t(world.rank());
      const std::size_t mark = world.trace()->events().size();
      try {
        const auto call = lab08_student_call::todo5();
        make_dp_tp_groups(world, tp);
      } catch (const gtl::Error& e) {
        messages[w] = e.what();
      }
      events[w] =
          world.trace()->events().size() - mark + std::size_t(world.counters("split").calls);
    });
    const std::regex names_n("(^|[^0-9])" + std::to_string(world_size) + "([^0-9]|$)");
    const std::regex names_tp("(^|[^0-9])" + std::to_string(tp) + "([^0-9]|$)");
    for (int w = 0; w < world_size; ++w) {
      const std::string& m = messages[std::size_t(w)];
      const bool refused = std::regex_search(m, names_n) && std::regex_search(m, names_tp) &&
                           m.find("not implemented") == std::string::npos &&
                           events[std::size_t(w)] == 0;
      out.record(refused);
      EXPECT_TRUE(refused) << "TP = " << tp << " on a world of " << world_size << ", rank " << w
                           << ": expected a gtl::Error naming " << world_size << " and " << tp
                           << " before any split, got \"" << m << "\" after "
                           << events[std::size_t(w)]
                           << " communicator events. Revisit the refusal in 5a";
    }
  }
}

// ---- 5b: the gradients -------------------------------------------------------------------------

struct Rank {
  std::vector<std::vector<float>> grads;           // the six, after finalize_gradients
  std::vector<gtl::dist::TraceEvent> collectives;  // what finalize_gradients issued
  gtl::dist::OpCounters tp_counters, dp_counters;  // all_reduce, per group
};

// Runs finalize_gradients on every rank of grid g, from lab08_cases::local_gradients, with the
// core's ProcessGrid groups; the parameters are the sequence-parallel MLP's shards.
std::vector<Rank> run_finalize(const lab08_cases::SpCase& m, const Case& c, const Grid& g) {
  gtl::ops::ScopedRowInvariant row_invariant(true);  // the ranks' rows, as the reference's
  std::vector<std::vector<Tensor>> local;
  for (int w = 0; w < g.world(); ++w)
    local.push_back(lab08_cases::local_gradients(m, c, g, w / g.tp, w % g.tp));
  std::vector<Rank> ranks(static_cast<std::size_t>(g.world()));
  run_tp(g.world(), [&](Communicator& world) {
    const auto w = std::size_t(world.rank());
    const gtl::dist::ProcessGrid grid(world, g.tp, 1, g.dp);
    SequenceParallelMLP shard(*m.full, grid.tp_group());
    const std::vector<nn::ParamRef> params = shard.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) Tensor(params[i].grad).copy_(local[w][i]);
    grid.tp_group().reset_counters();
    grid.dp_group().reset_counters();
    world.barrier();  // every rank's grid is built before any rank's scope begins
    const std::size_t mark = world.trace()->events().size();
    {
      const auto call = lab08_student_call::todo5();
      finalize_gradients(params, lab08_cases::kReplicated, grid.tp_group(), grid.dp_group());
    }
    const auto events = world.trace()->events();
    for (std::size_t e = mark; e < events.size(); ++e)
      if (events[e].kind == gtl::dist::TraceKind::Collective)
        ranks[w].collectives.push_back(events[e]);
    for (const nn::ParamRef& p : params) ranks[w].grads.push_back(p.grad.to_vector());
    ranks[w].tp_counters = grid.tp_group().counters("all_reduce");
    ranks[w].dp_counters = grid.dp_group().counters("all_reduce");
  });
  return ranks;
}

const char* const kNames[] = {"ln.weight", "ln.bias",    "fc1.weight",
                              "fc1.bias",  "fc2.weight", "fc2.bias"};

void expect_gradients(const Case& c, const std::string& test) {
  gtl::judge::Outputs out(test);
  gtl::ops::ScopedRowInvariant row_invariant(true);  // every row alone: the bound's premise
  for (const Grid& g : lab08_cases::kGrids) {
    const lab08_cases::SpCase m = lab08_cases::make_dp_tp_case(c, g);
    const lab08_cases::DpTpReference ref = lab08_cases::dp_tp_reference(m, g);
    const std::vector<Rank> ranks = run_finalize(m, c, g);
    for (int w = 0; w < g.world(); ++w) {
      const int r = w % g.tp;
      const Rank& got = ranks[std::size_t(w)];
      const std::string who = g.str() + ", world rank " + std::to_string(w) + " (dp_rank " +
                              std::to_string(w / g.tp) + ", tp_rank " + std::to_string(r) + "), " +
                              lab08_cases::dp_tp_case_str(c);
      for (int p = 0; p < 6; ++p) {
        const auto i = std::size_t(p);
        out.record_all(got.grads[i]);
        const bool rep = lab08_cases::kReplicated[i];
        EXPECT_EQ(
            bounded_problem(got.grads[i], lab08_cases::shard_of(ref.grads[i], p, g, r).to_vector(),
                            lab08_cases::bound_of(ref.bounds[i], p, g, r),
                            std::string(kNames[p]) +
                                "'s gradient against one process on "
                                "the whole batch, " +
                                who,
                            rep ? "5b: what a replicated parameter's gradient is in terms of "
                                  "what its TP group and its DP group hold (handout, \"Two "
                                  "dimensions: data x tensor\")"
                                : "5b: what a shard's gradient is in terms of what its DP "
                                  "group holds, and which group holds copies of the same shard "
                                  "(handout, \"Two dimensions: data x tensor\")"),
            "");
        // Ranks that hold the same parameter must hold the same bits: a shard on its DP group,
        // a replicated parameter on the whole world.
        const int same = rep ? 0 : r;
        EXPECT_EQ(bitwise_problem(got.grads[i], ranks[std::size_t(same)].grads[i],
                                  std::string(kNames[p]) + "'s gradient against world rank " +
                                      std::to_string(same) + "'s, " + who,
                                  "5b: the ranks holding one parameter must end with one "
                                  "gradient, or their weights drift apart"),
                  "");
      }
    }
  }
}

TEST(DataTensorParallel, GradientsEqualOneProcessAtAFixedShape) {
  expect_gradients(Case{2, 6, 21}, "DataTensorParallel.GradientsEqualOneProcessAtAFixedShape");
}

TEST(DataTensorParallel, GradientsEqualOneProcessAtSeededShapes) {
  const std::string test = "DataTensorParallel.GradientsEqualOneProcessAtSeededShapes";
  expect_gradients(lab08_cases::seeded_dp_tp_case(test), test);
}

// Every collective of the synchronisation, from the trace: the group it ran in (its world
// ranks), the operation and its payload, and the bytes this rank sent, a ring all-reduce's
// 2 (g - 1)/g of the payload on a group of g; each group's calls in parameter order. And the
// totals from each group's counters.
TEST(DataTensorParallel, TrafficRunsInTheRightGroups) {
  const std::string test = "DataTensorParallel.TrafficRunsInTheRightGroups";
  const Case c = lab08_cases::seeded_dp_tp_case(test);
  gtl::judge::Outputs out(test);
  for (const Grid& g : lab08_cases::kGrids) {
    const lab08_cases::SpCase m = lab08_cases::make_dp_tp_case(c, g);
    const std::vector<Rank> ranks = run_finalize(m, c, g);
    for (int w = 0; w < g.world(); ++w) {
      const Rank& got = ranks[std::size_t(w)];
      const std::string who =
          g.str() + ", world rank " + std::to_string(w) + ", " + lab08_cases::dp_tp_case_str(c);
      const std::vector<std::string> want = lab08_cases::dp_tp_collectives(g, w);
      std::vector<std::string> seen_tp, seen_dp, other;
      for (const auto& e : got.collectives) {
        const std::string s = lab08_cases::collective_str(e.group, e.op, e.bytes, e.bytes_sent);
        (e.group == lab08_cases::tp_members(g, w)   ? seen_tp
         : e.group == lab08_cases::dp_members(g, w) ? seen_dp
                                                    : other)
            .push_back(s);
      }
      std::vector<std::string> seen = seen_tp;
      seen.insert(seen.end(), seen_dp.begin(), seen_dp.end());
      seen.insert(seen.end(), other.begin(), other.end());
      for (const std::string& s : seen) out.record(s);
      out.record(std::string("end"));
      EXPECT_EQ(seen, want) << who << ": the synchronisation issued " << joined(seen)
                            << " (listed as the TP group's calls, then the DP group's, each group "
                               "in its order; how they interleave is yours), expected "
                            << joined(want)
                            << ". Revisit 5b: a replicated gradient's positions are summed in the "
                               "TP group, every gradient is averaged in the DP group";
      const lab08_cases::GroupTotals t = lab08_cases::dp_tp_totals(g);
      EXPECT_EQ(got.tp_counters.calls, t.tp_calls) << who << ": TP group all_reduce calls";
      EXPECT_EQ(got.tp_counters.bytes_sent, t.tp_sent) << who << ": TP group bytes sent";
      EXPECT_EQ(got.dp_counters.calls, t.dp_calls) << who << ": DP group all_reduce calls";
      EXPECT_EQ(got.dp_counters.bytes_sent, t.dp_sent) << who << ": DP group bytes sent";
      out.record(got.tp_counters.calls), out.record(got.tp_counters.bytes_sent);
      out.record(got.dp_counters.calls), out.record(got.dp_counters.bytes_sent);
    }
  }
}

}  // namespace
