// The equivalence every DDP variant must show: N ranks, each on its own shard, train exactly like
// one process on the full global batch (train_single_process, ddp_training.h). In the core's
// deterministic mode (sums in rank order) the synced gradients and the weights after every step
// are the same bits; with the default ring (each chunk's sum starts at another rank) the synced
// gradient of the first step is within the rounding bound of a sum of N terms in another order,
// |error| <= 2 (N-1) u sum_r |g_r| / N + u |avg| (u = 2^-24), and every rank still holds the same
// bits as every other.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <string>

#include "ddp_training.h"
#include "gtl/distributed/in_process.h"
#include "gtl/distributed/trace.h"
#include "gtl/nn/models.h"
#include "gtl_judge_output.h"
#include "lab05_cases.h"
#include "lab05_test_util.h"

namespace lab05::testing {

// The communication every DDP variant must show on each rank (ranks are
// threads, so averaged gradients could be read from the other ranks' memory through a global): in
// each of the config's steps every gradient byte goes through an all-reduce over the whole world,
// so the all-reduces' tensors (the trace's `bytes`) add up to at least steps x the model's
// gradient bytes (more only when a variant reduces padding or the harness reduces more). Returns
// "" or what is wrong.
inline std::string ddp_traffic_problem(const Communicator& comm, const TrainConfig& config,
                                       const std::string& what) {
  if (comm.world_size() == 1) return "";
  int64_t grad_bytes = 0;
  for (const auto& p : gtl::nn::make_model(config.model)->parameters())
    grad_bytes += int64_t(p.value.nbytes());
  std::vector<int> world(static_cast<std::size_t>(comm.world_size()));
  for (int r = 0; r < comm.world_size(); ++r) world[static_cast<std::size_t>(r)] = r;
  int64_t reduced = 0;
  for (const gtl::dist::TraceEvent& e : comm.trace()->events("all_reduce")) {
    if (e.group != world) {
      return what + ", rank " + std::to_string(comm.rank()) + ": an all_reduce over " +
             std::to_string(e.group.size()) + " ranks, expected the whole world of " +
             std::to_string(comm.world_size());
    }
    reduced += e.bytes;
  }
  const int64_t expected = config.steps * grad_bytes;
  if (reduced >= expected) return "";
  return what + ", " + std::to_string(comm.world_size()) + " ranks, rank " +
         std::to_string(comm.rank()) + ": expected at least " + std::to_string(expected) +
         " bytes all-reduced (" + std::to_string(config.steps) + " steps x " +
         std::to_string(grad_bytes) + " bytes of gradients), got " + std::to_string(reduced) +
         " in " + std::to_string(comm.counters("all_reduce").calls) +
         " all_reduce calls. Revisit the sync: every gradient must be averaged through the "
         "communicator's all-reduce each step, not read from another rank's memory";
}

inline std::vector<TrainResult> run_ddp(int world, const SyncFactory& sync, bool deterministic,
                                        const TrainConfig& config = TrainConfig{},
                                        const std::string& what = "") {
  std::vector<TrainResult> results(world);
  gtl::dist::run_ranks(
      world,
      [&](Communicator& comm) {
        results[comm.rank()] = train_lab_model(comm, config, sync);
        if (!what.empty()) {
          EXPECT_EQ(ddp_traffic_problem(comm, config, what), "");
        }
      },
      fast(deterministic));
  return results;
}

// `what` names the variant and the concept to revisit in failure messages; `test` the calling
// test, whose name draws the data seed (lab05_cases.h) and names the weights every rank ends with
// in deterministic mode, recorded for the judge.
inline void expect_equivalent_to_single_process(const SyncFactory& sync, const std::string& what,
                                                const std::string& test) {
  const TrainConfig config = lab05_cases::seeded_train_config(test);
  gtl::judge::Outputs recorded(test);
  for (int world : {1, 2, 3, 4}) {
    const TrainResult ref = train_single_process(world, config);
    const std::vector<TrainResult> got = run_ddp(world, sync, /*deterministic=*/true, config, what);
    for (int r = 0; r < world; ++r) {
      recorded.record_digest(got[r].weights.data(), got[r].weights.size());
      ASSERT_EQ(got[r].grads.size(), ref.grads.size());
      for (std::size_t s = 0; s < ref.grads.size(); ++s) {
        ASSERT_EQ(bitwise_diff(got[r].grads[s], ref.grads[s]), "")
            << what << ", " << world << " ranks, rank " << r << ", step " << s
            << ": the synced gradient must be the AVERAGE over ranks of every gradient (the mean "
            << "over the global batch), bit for bit in deterministic mode";
      }
      EXPECT_EQ(bitwise_diff(got[r].weights, ref.weights), "")
          << what << ", " << world << " ranks, rank " << r << ": the weights after "
          << ref.grads.size() << " steps must equal single-process "
          << "training on the full batch, bit for bit (data seed " << config.data_seed << ", "
          << gtl::test_seed::describe() << ")";
    }
  }
  // The default (non-deterministic) ring: the rounding bound, and identical ranks.
  for (int world : {2, 3, 4}) {
    const TrainResult ref = train_single_process(world, config);
    const std::vector<TrainResult> got =
        run_ddp(world, sync, /*deterministic=*/false, config, what);
    const double u = std::ldexp(1.0, -24);
    const std::vector<float>& g = got[0].grads[0];
    ASSERT_EQ(g.size(), ref.grads[0].size());
    for (std::size_t i = 0; i < g.size(); ++i) {
      const double avg = ref.grads[0][i];
      const double bound = 2.0 * (world - 1) * u * ref.abs_grads[0][i] + u * std::fabs(avg);
      ASSERT_TRUE(std::fabs(double(g[i]) - avg) <= bound)
          << what << ", " << world << " ranks (default ring), element " << i << " of the flat "
          << "gradient: got " << g[i] << ", expected " << avg << " within " << bound
          << " (the rounding of a sum of " << world << " gradients in another order)";
    }
    for (int r = 1; r < world; ++r) {
      EXPECT_EQ(bitwise_diff(got[r].weights, got[0].weights), "")
          << what << ", " << world << " ranks: rank " << r << " must hold the same weights as "
          << "rank 0 after every step (all ranks apply the same averaged gradient)";
    }
  }
}

}  // namespace lab05::testing
