// TODO 7: skip and clip decisions over shards. Every rank must reach the same decision as one
// process holding the whole gradient: the step is skipped everywhere when any rank's shard
// overflowed, and every shard is clipped by the norm of the WHOLE gradient (the core's
// single-process optim::clip_grad_norm_ is the reference, within float32 rounding: the ranks'
// partial results are combined in another order).
// Both decisions must travel through the communicator: one collective call of one element per
// rank, over the whole group (decision_traffic_problem), checked on every run with N > 1. Those
// calls can be made while the values come from another rank's memory (ranks here are threads):
// ClipProcesses.* (mpi_launch_test.cpp) runs both functions on three processes, which share none.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <sstream>

#include "gtl/distributed/trace.h"
#include "gtl/optim/grad_clip.h"
#include "lab06_cases.h"
#include "lab06_student_call.h"
#include "lab06_test_util.h"

namespace lab06 {
namespace {

// The student's functions, each rank's call inside TODO 7's scope (lab06_student_call.h): these
// shadow lab06's in the tests below. The references (optim::clip_grad_norm_) run before the
// ranks start, outside every scope.
void agree_found_inf(Communicator& comm, gtl::optim::LossScaler& scaler) {
  const auto call = lab06_student_call::todo7();
  lab06::agree_found_inf(comm, scaler);
}
float clip_sharded_grad_norm_(Communicator& comm, const std::vector<ParamRef>& shard_params,
                              float max_norm) {
  const auto call = lab06_student_call::todo7();
  return lab06::clip_sharded_grad_norm_(comm, shard_params, max_norm);
}

// Element i of the whole gradient: small values of both signs.
float grad_value(int64_t i) {
  return 0.5f * static_cast<float>((i * 7) % 11 - 5);
}

// Rank r's real shard of a gradient of `numel` elements, as a parameter (empty when it owns only
// padding).
std::vector<ParamRef> shard_of(int64_t numel, int n, int r) {
  const gtl::nn::ShardLayout layout(numel, n);
  const int64_t real = layout.real_numel(r);
  if (real == 0) return {};
  std::vector<float> g;
  for (int64_t i = 0; i < real; ++i) g.push_back(grad_value(layout.shard_offset(r) + i));
  return {ParamRef{Tensor::zeros({real}), Tensor::from_vector(g, {real}), Tensor(), "shard"}};
}

// The communication of one group decision on this rank (ranks are threads of
// one address space, so the right flag or norm could come from another rank's memory read through
// a global, with no communication). With N > 1 ranks: exactly one call, an all_reduce over the
// whole world {0, ..., N-1} of one element: the flag as a float32 [1] (4 bytes), for the norm one
// scalar per rank (4 or 8 bytes). The counters show that one call; the trace shows its op, group
// and bytes. Returns "" or what is wrong.
std::string decision_traffic_problem(const Communicator& comm, const std::string& what, bool norm) {
  const int n = comm.world_size();
  if (n == 1) return "";
  std::ostringstream s;
  s << what << ", rank " << comm.rank() << " of " << n << ": ";
  const gtl::dist::OpCounters all = comm.total_counters();
  const std::vector<gtl::dist::TraceEvent> ev =
      comm.trace()->events(gtl::dist::TraceKind::Collective);
  if (all.calls != 1 || comm.counters("all_reduce").calls != 1 || ev.size() != 1) {
    s << "expected exactly one all_reduce over the group and no other call, got "
      << comm.counters("all_reduce").calls << " all_reduce of " << all.calls << " calls. Revisit "
      << (norm ? "clip_sharded_grad_norm_" : "agree_found_inf")
      << ": the ranks must agree through the communicator (one all-reduce), not through memory "
      << "another rank can read";
    return s.str();
  }
  std::vector<int> world(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) world[static_cast<std::size_t>(r)] = r;
  const bool bytes_ok = ev[0].bytes == 4 || (norm && ev[0].bytes == 8);
  if (ev[0].group != world || !bytes_ok) {
    s << "expected an all_reduce of one element (" << (norm ? "4 or 8" : "4") << " bytes) over all "
      << n << " ranks, got " << ev[0].bytes << " bytes over " << ev[0].group.size()
      << " ranks. Revisit what each rank must contribute so that one reduction over every rank "
      << (norm ? "gives the whole model's norm" : "gives every rank the same decision");
    return s.str();
  }
  return "";
}

TEST(ClipOverShards, EveryRankClipsByTheNormOfTheWholeGradient) {
  for (int64_t numel : {37, 3}) {  // 3 on 5 ranks: ranks 3 and 4 own only padding
    for (int n : {1, 2, 3, 5}) {
      for (float max_norm : {1.f, 1000.f}) {  // clips, then leaves the gradient alone
        std::vector<float> whole;
        for (int64_t i = 0; i < numel; ++i) whole.push_back(grad_value(i));
        std::vector<ParamRef> ref = {
            ParamRef{Tensor::zeros({numel}), Tensor::from_vector(whole, {numel}), Tensor(), "g"}};
        const float ref_norm = gtl::optim::clip_grad_norm_(ref, max_norm).item();
        const std::vector<float> ref_clipped = ref[0].grad.to_vector();
        std::vector<float> norms(static_cast<std::size_t>(n));
        std::vector<std::vector<float>> clipped(static_cast<std::size_t>(n));
        gtl::dist::run_ranks(
            n,
            [&](Communicator& comm) {
              std::vector<ParamRef> mine = shard_of(numel, n, comm.rank());
              const float norm = clip_sharded_grad_norm_(comm, mine, max_norm);
              EXPECT_EQ(decision_traffic_problem(comm, "numel " + std::to_string(numel), true), "");
              norms[static_cast<std::size_t>(comm.rank())] = norm;
              if (!mine.empty())
                clipped[static_cast<std::size_t>(comm.rank())] = mine[0].grad.to_vector();
            },
            testing::fast());
        std::vector<float> all;
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(testing::bitwise_diff({norms[static_cast<std::size_t>(r)]}, {norms[0]}), "")
              << "numel " << numel << ", N " << n << ": rank " << r << "'s norm differs from rank "
              << "0's: every rank must use the same global norm";
          all.insert(all.end(), clipped[static_cast<std::size_t>(r)].begin(),
                     clipped[static_cast<std::size_t>(r)].end());
        }
        EXPECT_NEAR(norms[0], ref_norm, 1e-6 * ref_norm)
            << "numel " << numel << ", N " << n << ": the returned norm, expected the L2 norm of "
            << "the whole gradient (global_l2_norm returns a norm, not its square)"
            << (n > 1 ? ": with shards, the norm of all shards together, not one shard's norm"
                      : "");
        ASSERT_EQ(all.size(), ref_clipped.size()) << "numel " << numel << ", N " << n;
        for (std::size_t i = 0; i < all.size(); ++i) {
          EXPECT_NEAR(all[i], ref_clipped[i], 1e-6 * std::abs(ref_clipped[i]) + 1e-7)
              << "numel " << numel << ", N " << n << ", max_norm " << max_norm << ": element " << i
              << " after clipping: scale every shard by min(max_norm / (norm + 1e-6), 1)";
        }
      }
    }
  }
}

// Rank `overflow` (or none: -1) has an inf in its shard. Returns whether each rank's scaler
// stepped.
std::vector<bool> steps_taken(int n, int overflow, int64_t numel) {
  std::vector<bool> stepped(static_cast<std::size_t>(n));
  std::mutex mutex;
  gtl::dist::run_ranks(
      n,
      [&](Communicator& comm) {
        std::vector<ParamRef> mine = shard_of(numel, n, comm.rank());
        if (comm.rank() == overflow && !mine.empty()) {
          std::vector<float> g = mine[0].grad.to_vector();
          g[0] = std::numeric_limits<float>::infinity();
          mine[0].grad.copy_(Tensor::from_vector(g, mine[0].grad.shape()));
        }
        gtl::optim::LossScaler scaler;
        gtl::optim::AdamW optimizer(mine);
        scaler.unscale_(mine);
        agree_found_inf(comm, scaler);
        EXPECT_EQ(
            decision_traffic_problem(comm, "overflowing rank " + std::to_string(overflow), false),
            "");
        const bool did = scaler.step(optimizer);
        std::lock_guard<std::mutex> lock(mutex);
        stepped[static_cast<std::size_t>(comm.rank())] = did;
      },
      testing::fast());
  return stepped;
}

TEST(AgreeFoundInf, EveryRankSkipsTheStepWhenOneShardOverflowed) {
  gtl::judge::Outputs out("AgreeFoundInf.EveryRankSkipsTheStepWhenOneShardOverflowed");
  for (int n : {2, 3, 5}) {
    for (int overflow = 0; overflow < n; ++overflow) {
      const std::vector<bool> stepped = steps_taken(n, overflow, 37);
      out.record_all(stepped);
      for (int r = 0; r < n; ++r) {
        EXPECT_FALSE(stepped[static_cast<std::size_t>(r)])
            << "N " << n << ": rank " << overflow << "'s shard held an inf, and rank " << r
            << " stepped anyway: every rank's flag must report the overflow before step()";
      }
    }
    const std::vector<bool> finite = steps_taken(n, -1, 37);
    out.record_all(finite);
    for (int r = 0; r < n; ++r) {
      EXPECT_TRUE(finite[static_cast<std::size_t>(r)])
          << "N " << n << ", rank " << r << ": no shard overflowed, every rank must step";
    }
  }
}

// Two steps of one training run: rank n-1's shard overflows in the first, nothing in the second.
// The agreement must not outlive its step (a flag kept from step 1 would skip step 2 too), and
// the ranks' scales stay equal (all halved once). Returns each rank's two decisions, step 1's
// first, then its scale after step 2.
struct TwoSteps {
  std::vector<bool> first, second;
  std::vector<float> scale;
};
TwoSteps overflow_then_clean(int n, int64_t numel) {
  TwoSteps out{std::vector<bool>(std::size_t(n)), std::vector<bool>(std::size_t(n)),
               std::vector<float>(std::size_t(n))};
  std::mutex mutex;
  gtl::dist::run_ranks(
      n,
      [&](Communicator& comm) {
        std::vector<ParamRef> mine = shard_of(numel, n, comm.rank());
        const std::vector<float> finite =
            mine.empty() ? std::vector<float>{} : mine[0].grad.to_vector();
        gtl::optim::LossScaler scaler;
        gtl::optim::AdamW optimizer(mine);
        bool did[2] = {false, false};
        for (int step = 0; step < 2; ++step) {
          if (!mine.empty()) {
            std::vector<float> g = finite;
            if (step == 0 && comm.rank() == n - 1) g[0] = std::numeric_limits<float>::infinity();
            mine[0].grad.copy_(Tensor::from_vector(g, mine[0].grad.shape()));
          }
          scaler.unscale_(mine);
          agree_found_inf(comm, scaler);
          did[step] = scaler.step(optimizer);
          scaler.update();
        }
        std::lock_guard<std::mutex> lock(mutex);
        out.first[std::size_t(comm.rank())] = did[0];
        out.second[std::size_t(comm.rank())] = did[1];
        out.scale[std::size_t(comm.rank())] = scaler.scale();
      },
      testing::fast());
  return out;
}

TEST(AgreeFoundInf, AnOverflowThenACleanStepEveryRankStepsAgain) {
  gtl::judge::Outputs out("AgreeFoundInf.AnOverflowThenACleanStepEveryRankStepsAgain");
  for (int n : {3, 5}) {
    const TwoSteps got = overflow_then_clean(n, 37);
    out.record_all(got.first);
    out.record_all(got.second);
    for (int r = 0; r < n; ++r) {
      EXPECT_FALSE(got.first[std::size_t(r)])
          << "N " << n << ", step 1: rank " << n - 1 << "'s shard overflowed, and rank " << r
          << " stepped anyway";
      EXPECT_TRUE(got.second[std::size_t(r)])
          << "N " << n << ", step 2: no shard overflowed, and rank " << r
          << " skipped: the agreement belongs to one step; nothing of step 1's overflow may "
             "reach step 2 (a flag kept across calls, a maximum never reset)";
      EXPECT_EQ(got.scale[std::size_t(r)], got.scale[0])
          << "N " << n << ": rank " << r << "'s loss scale after two steps differs from rank "
          << "0's: every rank must take the same decisions, so their scales stay equal";
    }
  }
}

TEST(AgreeFoundInf, ARankWithoutGradientsCountsAsFinite) {
  // 3 elements on 5 ranks: ranks 3 and 4 unscale nothing, their flag is undefined.
  const std::vector<bool> finite = steps_taken(5, -1, 3);
  const std::vector<bool> overflow = steps_taken(5, 1, 3);
  gtl::judge::Outputs out("AgreeFoundInf.ARankWithoutGradientsCountsAsFinite");
  out.record_all(finite);
  out.record_all(overflow);
  for (int r = 0; r < 5; ++r) {
    EXPECT_TRUE(finite[static_cast<std::size_t>(r)])
        << "rank " << r << ": an undefined flag (no parameters) counts as 0";
    EXPECT_FALSE(overflow[static_cast<std::size_t>(r)])
        << "rank " << r << ": rank 1 overflowed; ranks without parameters must skip too";
  }
}

// Seeded gradients, world sizes and max norms, against the core's single-process clip_grad_norm_.
TEST(ClipOverShards, SeededGradientsWorldsAndMaxNorms) {
  gtl::judge::Outputs out("ClipOverShards.SeededGradientsWorldsAndMaxNorms");
  for (const lab06_cases::ClipCase& c : lab06_cases::seeded_clip_cases()) {
    const int64_t numel = static_cast<int64_t>(c.grad.size());
    const int n = c.world;
    const std::string at = "numel " + std::to_string(numel) + ", N " + std::to_string(n) +
                           ", max_norm " + std::to_string(c.max_norm) + ", " +
                           gtl::test_seed::describe();
    std::vector<ParamRef> ref = {
        ParamRef{Tensor::zeros({numel}), Tensor::from_vector(c.grad, {numel}), Tensor(), "g"}};
    const float ref_norm = gtl::optim::clip_grad_norm_(ref, c.max_norm).item();
    const std::vector<float> ref_clipped = ref[0].grad.to_vector();
    std::vector<float> norms(static_cast<std::size_t>(n));
    std::vector<std::vector<float>> clipped(static_cast<std::size_t>(n));
    gtl::dist::run_ranks(
        n,
        [&](Communicator& comm) {
          const gtl::nn::ShardLayout layout(numel, n);
          const int64_t real = layout.real_numel(comm.rank());
          std::vector<ParamRef> mine;
          if (real > 0) {
            const auto first = c.grad.begin() + layout.shard_offset(comm.rank());
            mine.push_back(ParamRef{Tensor::zeros({real}),
                                    Tensor::from_vector({first, first + real}, {real}), Tensor(),
                                    "shard"});
          }
          norms[static_cast<std::size_t>(comm.rank())] =
              clip_sharded_grad_norm_(comm, mine, c.max_norm);
          EXPECT_EQ(decision_traffic_problem(comm, at, true), "");
          if (!mine.empty())
            clipped[static_cast<std::size_t>(comm.rank())] = mine[0].grad.to_vector();
        },
        testing::fast());
    std::vector<float> all;
    for (const std::vector<float>& shard : clipped)
      all.insert(all.end(), shard.begin(), shard.end());
    out.record_all(norms);
    out.record_all(all);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(testing::bitwise_diff({norms[static_cast<std::size_t>(r)]}, {norms[0]}), "")
          << at << ": rank " << r << "'s norm differs from rank 0's";
    }
    EXPECT_NEAR(norms[0], ref_norm, 1e-6 * ref_norm) << at << ": the global norm";
    ASSERT_EQ(all.size(), ref_clipped.size()) << at;
    for (std::size_t i = 0; i < all.size(); ++i) {
      EXPECT_NEAR(all[i], ref_clipped[i], 1e-6 * std::abs(ref_clipped[i]) + 1e-7)
          << at << ": element " << i << " after clipping";
    }
  }
}

TEST(AgreeFoundInf, SeededWorldsAndOverflowingRanks) {
  gtl::judge::Outputs out("AgreeFoundInf.SeededWorldsAndOverflowingRanks");
  for (const lab06_cases::InfCase& c : lab06_cases::seeded_inf_cases()) {
    const std::vector<bool> stepped = steps_taken(c.world, c.overflow, c.numel);
    out.record_all(stepped);
    // An inf exists only when the overflowing rank's shard holds a real element.
    const bool inf =
        c.overflow >= 0 && gtl::nn::ShardLayout(c.numel, c.world).real_numel(c.overflow) > 0;
    for (int r = 0; r < c.world; ++r) {
      EXPECT_EQ(stepped[static_cast<std::size_t>(r)], !inf)
          << "numel " << c.numel << ", N " << c.world << ", overflowing rank " << c.overflow << ", "
          << gtl::test_seed::describe() << ": rank " << r
          << (inf ? " stepped although a shard overflowed"
                  : " skipped although no shard overflowed");
    }
  }
}

// An agree_found_inf that copies the flag of the rank the test made overflow through memory the
// ranks share (threads: a mutex, a condition variable and a global, no call of the communicator)
// reaches the right decision, and decision_traffic_problem rejects it. No rubric check selects
// this suite: it grades no student code.
TEST(GlobalSharingAttack, AFlagAgreedThroughAGlobalIsRightAndFailsTheTrafficCheck) {
  const int n = 3, overflow = 1;
  std::mutex mutex;
  std::condition_variable all;
  int posted = 0;
  float shared_flag = 0;
  gtl::dist::run_ranks(
      n,
      [&](Communicator& comm) {
        gtl::optim::LossScaler scaler;
        std::vector<ParamRef> mine = shard_of(37, n, comm.rank());
        if (comm.rank() == overflow) {
          std::vector<float> g = mine[0].grad.to_vector();
          g[0] = std::numeric_limits<float>::infinity();
          mine[0].grad.copy_(Tensor::from_vector(g, mine[0].grad.shape()));
        }
        scaler.unscale_(mine);
        float copied = 0;
        {
          std::unique_lock<std::mutex> lock(mutex);
          if (comm.rank() == overflow) shared_flag = scaler.found_inf_flag().item();
          if (++posted == n) all.notify_all();
          all.wait(lock, [&] { return posted == n; });
          copied = shared_flag;
        }
        scaler.set_found_inf_flag(Tensor::full({1}, copied));
        EXPECT_EQ(scaler.found_inf_flag().item(), 1.f)
            << "rank " << comm.rank() << ": the attack must reach the right decision";
        const std::string problem = decision_traffic_problem(comm, "the attack", false);
        EXPECT_NE(problem.find("expected exactly one all_reduce"), std::string::npos)
            << "rank " << comm.rank() << ": the check must reject a flag shared through memory, "
            << "got '" << problem << "'";
      },
      testing::fast());
}

}  // namespace
}  // namespace lab06
