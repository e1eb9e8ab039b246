// TODO 5: data x tensor parallelism on a grid of dp x tp in-process ranks, in the core's
// deterministic mode. make_dp_tp_groups: each rank's TP and DP groups, against the properties of
// the header's layout (groups_problem) and the core's ProcessGrid, and the refusal of a TP size the
// world cannot hold. finalize_gradients: the gradient synchronisation of one step, given every
// rank's micro-batch gradients (lab08_cases.h, local_gradients) and the core's ProcessGrid groups
// (so that its checks never depend on make_dp_tp_groups): against one process on the whole batch
// within the derived bound, bit for bit the same on the ranks that must agree, and every
// collective's payload (the parameters' sizes), bytes and group (the groups handed in). Every call
// into the student's TODO 5 runs inside its guard scope (lab08_student_call.h), where the core's
// ProcessGrid refuses to run; the ProcessGrids the checks compare with or hand to
// finalize_gradients are built outside it, behind a barrier of the world (the scopes are
// process-wide).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "gtl/distributed/process_grid.h"
#include "gtl_judge_output.h"
#include "lab08_cases.h"
#include "lab08_references.h"
#include "lab08_student_call.h"
#include "lab08_test_util.h"
#include "tensor_parallel.h"

namespace {

using namespace lab08;
using namespace lab08::testing;
using namespace lab08_references;
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

// ---- make_dp_tp_groups: the groups --------------------------------------------------------------

// What every rank of a grid reported from make_dp_tp_groups: its coordinates, its rank in each
// group and each group's members (world ranks, in the group's rank order).
struct GroupsSeen {
  std::vector<int> tp_rank, dp_rank, tp_in, dp_in;
  std::vector<std::vector<int>> tp, dp;
};

// "" when rank w's groups have the layout of the header, else the first property they break and
// what came. The properties pin the groups: the TP groups are runs of tp consecutive world ranks
// that partition the world, numbered by dp_rank from world rank 0 up; a DP group takes from every
// TP group the rank with the same tp_rank; both are ordered as in the world.
std::string groups_problem(const Grid& g, const GroupsSeen& s, int w) {
  const auto i = std::size_t(w);
  const std::vector<int>& tp = s.tp[i];
  const std::vector<int>& dp = s.dp[i];
  if (int(tp.size()) != g.tp || int(dp.size()) != g.dp)
    return "group sizes: expected a TP group of " + std::to_string(g.tp) + " and a DP group of " +
           std::to_string(g.dp) + ", got " + members_str(tp) + " and " + members_str(dp);
  if (!std::is_sorted(tp.begin(), tp.end()) || !std::is_sorted(dp.begin(), dp.end()) ||
      std::adjacent_find(tp.begin(), tp.end()) != tp.end() ||
      std::adjacent_find(dp.begin(), dp.end()) != dp.end())
    return "world order: a group's ranks must be ordered as in the world (the split's key), got "
           "TP group " +
           members_str(tp) + " and DP group " + members_str(dp);
  if (s.tp_in[i] < 0 || s.tp_in[i] >= g.tp || tp[std::size_t(s.tp_in[i])] != w || s.dp_in[i] < 0 ||
      s.dp_in[i] >= g.dp || dp[std::size_t(s.dp_in[i])] != w)
    return "own place: world rank " + std::to_string(w) + " must be member " +
           std::to_string(s.tp_in[i]) + " of its TP group and " + std::to_string(s.dp_in[i]) +
           " of its DP group (its rank in each), got " + members_str(tp) + " and " +
           members_str(dp);
  if (s.tp_rank[i] != s.tp_in[i] || s.dp_rank[i] != s.dp_in[i])
    return "coordinates: tp_rank and dp_rank must be the rank's rank in its TP and DP group (" +
           std::to_string(s.tp_in[i]) + " and " + std::to_string(s.dp_in[i]) + "), got " +
           std::to_string(s.tp_rank[i]) + " and " + std::to_string(s.dp_rank[i]);
  for (int m : tp)
    if (s.tp[std::size_t(m)] != tp || s.dp_rank[std::size_t(m)] != s.dp_rank[i])
      return "one TP group per replica: member " + std::to_string(m) + " reports TP group " +
             members_str(s.tp[std::size_t(m)]) + " and dp_rank " +
             std::to_string(s.dp_rank[std::size_t(m)]) + ", this rank " + members_str(tp) +
             " and " + std::to_string(s.dp_rank[i]);
  for (int m : dp)
    if (s.dp[std::size_t(m)] != dp || s.tp_rank[std::size_t(m)] != s.tp_rank[i])
      return "one DP group per shard: member " + std::to_string(m) + " reports DP group " +
             members_str(s.dp[std::size_t(m)]) + " and tp_rank " +
             std::to_string(s.tp_rank[std::size_t(m)]) + ", this rank " + members_str(dp) +
             " and " + std::to_string(s.tp_rank[i]);
  if (tp.back() - tp.front() != g.tp - 1)
    return "TP innermost: a TP group must be " + std::to_string(g.tp) +
           " neighbouring world ranks, got " + members_str(tp);
  int replicas_below = 0;  // the TP groups that begin below this one: replica 0 first, then up
  for (int m = 0; m < tp.front(); ++m)
    if (!s.tp[std::size_t(m)].empty() && s.tp[std::size_t(m)].front() == m) ++replicas_below;
  if (s.dp_rank[i] != replicas_below)
    return "replica 0 first: the TP group " + members_str(tp) + " has " +
           std::to_string(replicas_below) + " replicas' TP groups below it, so its dp_rank is " +
           std::to_string(replicas_below) + ", got " + std::to_string(s.dp_rank[i]);
  return "";
}

// Every rank of each grid (and of 2 x 4, 1 x 4, 4 x 1): its coordinates and the members of its two
// groups, in rank order, against the layout's properties (groups_problem) and against the core's
// ProcessGrid(world, tp, 1, dp) on the same world.
TEST(DataTensorParallel, GroupsAreTheProcessGridsGroups) {
  gtl::judge::Outputs out("DataTensorParallel.GroupsAreTheProcessGridsGroups");
  std::vector<Grid> grids = lab08_cases::kGrids;
  for (const Grid& g : std::vector<Grid>{{2, 4}, {1, 4}, {4, 1}}) grids.push_back(g);
  for (const Grid& g : grids) {
    const auto n = static_cast<std::size_t>(g.world());
    GroupsSeen s{std::vector<int>(n, -1),          std::vector<int>(n, -1),
                 std::vector<int>(n, -1),          std::vector<int>(n, -1),
                 std::vector<std::vector<int>>(n), std::vector<std::vector<int>>(n)};
    std::vector<std::vector<int>> tp_grid(n), dp_grid(n);
    run_tp(g.world(), [&](Communicator& world) {
      const auto w = std::size_t(world.rank());
      {
        const auto call = lab08_student_call::todo5();
        const DpTpGroups mine = make_dp_tp_groups(world, g.tp);
        s.tp_rank[w] = mine.tp_rank, s.dp_rank[w] = mine.dp_rank;
        GTL_CHECK(mine.tp != nullptr && mine.dp != nullptr, "make_dp_tp_groups left a group empty");
        s.tp_in[w] = mine.tp->rank(), s.dp_in[w] = mine.dp->rank();
        s.tp[w] = members_of(*mine.tp, world.rank());
        s.dp[w] = members_of(*mine.dp, world.rank());
      }
      world.barrier();  // every rank's scope has ended: the core's grid may run
      const gtl::dist::ProcessGrid grid(world, g.tp, 1, g.dp);
      tp_grid[w] = members_of(grid.tp_group(), world.rank());
      dp_grid[w] = members_of(grid.dp_group(), world.rank());
    });
    for (int w = 0; w < g.world(); ++w) {
      const auto i = std::size_t(w);
      const std::string who = g.str() + ", world rank " + std::to_string(w);
      out.record(s.tp_rank[i]), out.record(s.dp_rank[i]), out.record(s.tp_in[i]);
      out.record(s.dp_in[i]), out.record_all(s.tp[i]), out.record_all(s.dp[i]);
      const std::string problem = groups_problem(g, s, w);
      EXPECT_EQ(problem, "") << who << ": " << problem
                             << ". Revisit 5: TP is innermost, its ranks are neighbours (and "
                                "what Communicator::split's color and key decide)";
      EXPECT_TRUE(problem != "" || (s.tp[i] == tp_grid[i] && s.dp[i] == dp_grid[i]))
          << who << ": TP group " << members_str(s.tp[i]) << " and DP group "
          << members_str(s.dp[i]) << ", the core's ProcessGrid builds " << members_str(tp_grid[i])
          << " and " << members_str(dp_grid[i]) << ". Revisit 5: the header's layout";
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
                           << " communicator events. Revisit the refusal in 5";
    }
  }
}

// ---- finalize_gradients: the gradients ----------------------------------------------------------

struct Rank {
  std::vector<std::vector<float>> grads;           // the six, after finalize_gradients
  std::vector<gtl::dist::TraceEvent> collectives;  // what finalize_gradients issued
  gtl::dist::OpCounters tp_counters, dp_counters;  // all_reduce, per group
  std::vector<int> tp_group, dp_group;             // the groups handed in (world ranks)
  std::vector<int64_t> payload;                    // each parameter's gradient, in bytes
};

// Every world rank's {dp_rank, tp_rank} on grid g, as the core's ProcessGrid gives them.
std::vector<std::pair<int, int>> grid_coordinates(const Grid& g) {
  std::vector<std::pair<int, int>> coords(static_cast<std::size_t>(g.world()));
  run_tp(g.world(), [&](Communicator& world) {
    const gtl::dist::ProcessGrid grid(world, g.tp, 1, g.dp);
    coords[std::size_t(world.rank())] = {grid.dp_group().rank(), grid.tp_group().rank()};
  });
  return coords;
}

// Runs finalize_gradients on every rank of grid g, from lab08_cases::local_gradients, with the
// core's ProcessGrid groups; the parameters are the sequence-parallel MLP's shards.
std::vector<Rank> run_finalize(const lab08_cases::SpCase& m, const Case& c, const Grid& g) {
  gtl::ops::ScopedRowInvariant row_invariant(true);  // the ranks' rows, as the reference's
  std::vector<std::vector<Tensor>> local;
  for (const auto& [d, r] : grid_coordinates(g))
    local.push_back(lab08_cases::local_gradients(m, c, g, d, r));
  std::vector<Rank> ranks(static_cast<std::size_t>(g.world()));
  run_tp(g.world(), [&](Communicator& world) {
    const auto w = std::size_t(world.rank());
    const gtl::dist::ProcessGrid grid(world, g.tp, 1, g.dp);
    SequenceParallelMLP shard(*m.full, grid.tp_group());
    const std::vector<nn::ParamRef> params = shard.parameters();
    for (std::size_t i = 0; i < params.size(); ++i) Tensor(params[i].grad).copy_(local[w][i]);
    ranks[w].tp_group = members_of(grid.tp_group(), world.rank());
    ranks[w].dp_group = members_of(grid.dp_group(), world.rank());
    for (const nn::ParamRef& p : params) ranks[w].payload.push_back(int64_t(p.grad.nbytes()));
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
    const std::vector<std::vector<double>> bounds = one_process_bounds(m, g);
    const std::vector<Tensor> one = one_process_gradients(m, g);
    const std::vector<Rank> ranks = run_finalize(m, c, g);
    const std::vector<std::pair<int, int>> coords = grid_coordinates(g);
    for (int w = 0; w < g.world(); ++w) {
      const auto [d, r] = coords[std::size_t(w)];
      const Rank& got = ranks[std::size_t(w)];
      const std::string who = g.str() + ", world rank " + std::to_string(w) + " (dp_rank " +
                              std::to_string(d) + ", tp_rank " + std::to_string(r) + "), " +
                              lab08_cases::dp_tp_case_str(c);
      for (int p = 0; p < 6; ++p) {
        const auto i = std::size_t(p);
        out.record_all(got.grads[i]);
        const bool rep = lab08_cases::kReplicated[i];
        EXPECT_EQ(
            bounded_problem(got.grads[i], lab08_cases::shard_of(one[i], p, g, r).to_vector(),
                            lab08_cases::bound_of(bounds[i], p, g, r),
                            std::string(kNames[p]) +
                                "'s gradient against one process on "
                                "the whole batch, " +
                                who,
                            rep ? "5: what a replicated parameter's gradient is in terms of "
                                  "what its TP group and its DP group hold (handout, \"Two "
                                  "dimensions: data x tensor\")"
                                : "5: what a shard's gradient is in terms of what its DP "
                                  "group holds, and which group holds copies of the same shard "
                                  "(handout, \"Two dimensions: data x tensor\")"),
            "");
        // Ranks that hold the same parameter must hold the same bits: a shard on its DP group,
        // a replicated parameter on the whole world.
        std::size_t same = 0;  // the lowest world rank holding this parameter
        while (!rep && coords[same].second != r) ++same;
        EXPECT_EQ(bitwise_problem(got.grads[i], ranks[same].grads[i],
                                  std::string(kNames[p]) + "'s gradient against world rank " +
                                      std::to_string(same) + "'s, " + who,
                                  "5: the ranks holding one parameter must end with one "
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

// "" when the calls one group saw are the header's, else the first property they break: every
// call an all_reduce carrying, in order, the payloads `want` (the parameters' gradients as the
// test measured them), each sending a ring all-reduce's 2 (g - 1)/g of its payload on the g
// ranks of the group, and the group's counters the sum of its calls.
std::string group_calls_problem(const std::vector<gtl::dist::TraceEvent>& calls,
                                const std::vector<int64_t>& want, int group_size,
                                const gtl::dist::OpCounters& counters, const std::string& group) {
  std::vector<int64_t> got;
  int64_t sent = 0;
  for (const auto& e : calls) {
    if (e.op != "all_reduce")
      return "the " + group + " group ran a " + e.op + ": the synchronisation is all-reduces only";
    got.push_back(e.bytes);
    sent += e.bytes_sent;
    const int64_t ring = 2 * (group_size - 1) * e.bytes / group_size;
    if (e.bytes_sent != ring)
      return "an all_reduce of " + std::to_string(e.bytes) + " bytes in the " + group +
             " group sent " + std::to_string(e.bytes_sent) + " bytes, a ring all-reduce on " +
             std::to_string(group_size) + " ranks sends " + std::to_string(ring);
  }
  auto list = [](const std::vector<int64_t>& v) {
    std::string s = "{";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "}";
  };
  if (got != want)
    return "the " + group + " group's all-reduces carried " + list(got) + " bytes, expected " +
           list(want) +
           " (the payloads of the parameters this group must reduce, in parameter "
           "order)";
  if (counters.calls != int64_t(calls.size()) || counters.bytes_sent != sent)
    return "the " + group + " group's counters say " + std::to_string(counters.calls) +
           " all_reduce calls and " + std::to_string(counters.bytes_sent) +
           " bytes sent, its traced calls " + std::to_string(calls.size()) + " and " +
           std::to_string(sent);
  return "";
}

// Every collective of the synchronisation, from the trace: the group it ran in (the world ranks
// of the communicator, against the two groups the test handed in), the operation and its payload
// (against the sizes of the parameters' gradients), and the bytes this rank sent, a ring
// all-reduce's 2 (g - 1)/g of the payload on a group of g; each group's calls in parameter order.
// And each group's counters against its calls.
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
      std::vector<gtl::dist::TraceEvent> tp_calls, dp_calls;
      std::string problem;
      for (const auto& e : got.collectives) {
        if (e.group == got.tp_group)
          tp_calls.push_back(e);
        else if (e.group == got.dp_group)
          dp_calls.push_back(e);
        else if (problem.empty())
          problem = "a " + e.op + " ran in the group " + members_str(e.group) +
                    ", neither this rank's TP group " + members_str(got.tp_group) +
                    " nor its DP group " + members_str(got.dp_group);
      }
      std::vector<int64_t> replicated_payloads;
      for (std::size_t p = 0; p < got.payload.size(); ++p)
        if (lab08_cases::kReplicated[p]) replicated_payloads.push_back(got.payload[p]);
      if (problem.empty())
        problem = group_calls_problem(tp_calls, replicated_payloads, g.tp, got.tp_counters, "TP");
      if (problem.empty())
        problem = group_calls_problem(dp_calls, got.payload, g.dp, got.dp_counters, "DP");
      EXPECT_EQ(problem, "") << who << ": " << problem
                             << ". Revisit 5: the header's all-reduces, in the group each belongs "
                                "to (how the two groups' calls interleave is yours)";
      // For the judge: the TP group's calls, then the DP group's, then any other, each in order.
      std::vector<gtl::dist::TraceEvent> seen = tp_calls;
      seen.insert(seen.end(), dp_calls.begin(), dp_calls.end());
      for (const auto& e : got.collectives)
        if (e.group != got.tp_group && e.group != got.dp_group) seen.push_back(e);
      for (const auto& e : seen)
        out.record(lab08_cases::collective_str(e.group, e.op, e.bytes, e.bytes_sent));
      out.record(std::string("end"));
      out.record(got.tp_counters.calls), out.record(got.tp_counters.bytes_sent);
      out.record(got.dp_counters.calls), out.record(got.dp_counters.bytes_sent);
    }
  }
}

}  // namespace
