// TODO 3: the search. Priced with seeded pricing functions of few distinct values (so that equal
// speeds and memories are common, and some clusters fit nothing), on seeded clusters, models and
// global batches:
//   Search.SpaceIsEveryRunnableTupleInOrder   the candidates are exactly the tuples that pass
//       capstone.h's rules, in its order (a brute force over a superset, lab11_cases.h), each
//       priced once, `fits` against the cluster's memory
//   Search.BestIsTheFastestThatFitsTiesByMemoryThenOrder   the choice, the tie rule, and
//       feasible = false where nothing fits
// The judge rebuilds both from the same brute force.
#include <gtest/gtest.h>

#include "capstone.h"
#include "gtl/runtime/error.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab11_cases.h"

namespace lab11 {
namespace {

using lab11_cases::SearchCase;

std::string where(const SearchCase& s) {
  return std::to_string(s.cluster.nodes) + " node(s) of " +
         std::to_string(s.cluster.gpus_per_node) + " GPUs, " + describe(s.model) + ", " +
         std::to_string(s.request.global_batch_tokens) + " tokens a step, micro-batches up to " +
         std::to_string(s.request.max_micro_batch) + " (" + gtl::test_seed::describe() + ")";
}

Plan run(const SearchCase& s, int& memory_calls, int& speed_calls) {
  return search(
      s.model, s.cluster, s.request,
      [&](const Config& c) {
        ++memory_calls;
        return s.pricing.memory(c);
      },
      [&](const Config& c) {
        ++speed_calls;
        return s.pricing.speed(c);
      });
}

void record(gtl::judge::Outputs& out, const Config& c) {
  for (int64_t v : {int64_t{c.dp}, int64_t{c.tp}, int64_t{c.pp}, int64_t{c.zero_stage},
                    int64_t{c.sequence_parallel}, c.micro_batch, c.accumulation,
                    int64_t{c.activation_checkpointing}, int64_t{c.precision == Precision::Fp32}})
    out.record(v);
}

bool same(const Config& a, const Config& b) {
  return a.dp == b.dp && a.tp == b.tp && a.pp == b.pp && a.zero_stage == b.zero_stage &&
         a.sequence_parallel == b.sequence_parallel && a.micro_batch == b.micro_batch &&
         a.accumulation == b.accumulation &&
         a.activation_checkpointing == b.activation_checkpointing && a.precision == b.precision;
}

TEST(Search, SpaceIsEveryRunnableTupleInOrder) {
  const std::string test = "Search.SpaceIsEveryRunnableTupleInOrder";
  gtl::judge::Outputs out(test);
  for (const SearchCase& s : lab11_cases::seeded_search_cases(test, 40)) {
    int mem = 0, spd = 0;
    const Plan plan = run(s, mem, spd);
    out.record(plan.candidates.size());
    for (const Candidate& c : plan.candidates) {
      record(out, c.config);
      out.record(c.fits);
    }
    const std::vector<Config> want = lab11_cases::brute_force_space(s.model, s.cluster, s.request);
    ASSERT_EQ(plan.candidates.size(), want.size())
        << where(s) << ": " << plan.candidates.size() << " candidates, the space has "
        << want.size() << " (revisit the rules: TP inside a node and dividing H and V, pp "
        << "dividing L, SP only for tp > 1, micro-batches powers of two, and micro-batch x "
        << "accumulation x dp x T = the global batch exactly)";
    for (std::size_t i = 0; i < want.size(); ++i) {
      const Candidate& c = plan.candidates[i];
      ASSERT_TRUE(same(c.config, want[i]))
          << where(s) << ": candidate " << i << " is " << describe(c.config) << ", expected "
          << describe(want[i]) << " (the order of capstone.h, outermost first)";
      EXPECT_EQ(c.memory_bytes, s.pricing.memory(c.config)) << where(s) << ": candidate " << i;
      EXPECT_EQ(c.tokens_per_s, s.pricing.speed(c.config)) << where(s) << ": candidate " << i;
      EXPECT_EQ(c.fits, c.memory_bytes <= s.cluster.gpu_memory_bytes)
          << where(s) << ": candidate " << i << " fits iff its memory <= the GPU's";
    }
    EXPECT_EQ(mem, static_cast<int>(want.size())) << where(s) << ": memory priced once each";
    EXPECT_EQ(spd, static_cast<int>(want.size())) << where(s) << ": speed priced once each";
  }
}

TEST(Search, BestIsTheFastestThatFitsTiesByMemoryThenOrder) {
  const std::string test = "Search.BestIsTheFastestThatFitsTiesByMemoryThenOrder";
  gtl::judge::Outputs out(test);
  int infeasible = 0, ties = 0;
  for (const SearchCase& s : lab11_cases::seeded_search_cases(test, 60)) {
    int mem = 0, spd = 0;
    const Plan plan = run(s, mem, spd);
    out.record(plan.feasible);
    record(out, plan.best.config);
    // The reference choice over the space, priced the same way.
    std::vector<Candidate> cands;
    for (const Config& c : lab11_cases::brute_force_space(s.model, s.cluster, s.request)) {
      Candidate k;
      k.config = c;
      k.memory_bytes = s.pricing.memory(c);
      k.tokens_per_s = s.pricing.speed(c);
      k.fits = k.memory_bytes <= s.cluster.gpu_memory_bytes;
      cands.push_back(k);
    }
    const int best = lab11_cases::brute_force_best(cands);
    if (best < 0) {
      ++infeasible;
      EXPECT_FALSE(plan.feasible) << where(s) << ": no candidate fits, feasible must be false";
      continue;
    }
    const Candidate& w = cands[static_cast<std::size_t>(best)];
    for (const Candidate& c : cands)
      if (c.fits && c.tokens_per_s == w.tokens_per_s && !same(c.config, w.config)) {
        ++ties;
        break;
      }
    ASSERT_TRUE(plan.feasible) << where(s) << ": " << describe(w.config) << " fits";
    EXPECT_TRUE(same(plan.best.config, w.config))
        << where(s) << ": the best is " << describe(w.config) << " (" << w.tokens_per_s
        << " tokens/s, " << w.memory_bytes << " B), yours " << describe(plan.best.config) << " ("
        << plan.best.tokens_per_s << " tokens/s, " << plan.best.memory_bytes
        << " B): the fastest that fits, then the smaller memory, then the earliest";
  }
  // The seeded cases must exercise what they are for (a case list that never ties proves
  // nothing about the tie rule).
  EXPECT_GT(infeasible, 0) << "no seeded case without a fitting candidate";
  EXPECT_GT(ties, 0) << "no seeded case with equally fast candidates";
}

TEST(Search, RefusesAnEmptyBatchAndAnswersInfeasibleWithoutThrowing) {
  gtl::judge::Outputs out("Search.RefusesAnEmptyBatchAndAnswersInfeasibleWithoutThrowing");
  SearchCase s = lab11_cases::seeded_search_cases("Search.Refuses", 1).front();
  s.request.global_batch_tokens = 0;
  int mem = 0, spd = 0;
  bool threw = false;
  try {
    run(s, mem, spd);
  } catch (const gtl::Error&) {
    threw = true;
  }
  out.record(threw);
  EXPECT_TRUE(threw) << "a global batch of 0 tokens: search throws gtl::Error";
  s.request.global_batch_tokens = s.model.context * 64;
  s.cluster.gpu_memory_bytes = 0;  // every candidate needs 1000 bytes or more: nothing fits
  const Plan plan = run(s, mem, spd);
  out.record(plan.feasible);
  EXPECT_FALSE(plan.feasible) << "nothing fits: feasible = false, not an exception";
}

}  // namespace
}  // namespace lab11
