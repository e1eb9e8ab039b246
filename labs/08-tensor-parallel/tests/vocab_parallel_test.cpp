// TODO 3: the vocabulary-parallel embedding and cross-entropy on k = 1, 2, 4 in-process ranks,
// against the core's TokenEmbedding and ops::cross_entropy on the full logits; the allocator's
// peak of each rank shows the full logits are never assembled. Every call into the student's
// layers runs inside TODO 3's guard scope (lab08_student_call.h); the expected values come from
// the core before the ranks start.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <regex>

#include "gtl/memory/allocator.h"
#include "gtl/ops/cross_entropy.h"
#include "gtl_judge_output.h"
#include "lab08_cases.h"
#include "lab08_student_call.h"
#include "lab08_test_util.h"
#include "tensor_parallel.h"

namespace {

using namespace lab08;
using namespace lab08::testing;
using lab08_cases::Case;
using lab08_cases::kVocab;

// Each rank's layer is built from ANOTHER table (`built_from`), then the true table's rows are
// written into its shard: the lookup must come from the ranks' shards, through the group's one
// collective, not from the table the constructor saw (a forward that kept that table and looked
// every row up in it, communicating a scratch tensor of the right bytes, would pass on the true
// table; the fixture decoy_lab08_embedding does that).
void expect_embedding_equals_unsharded(const Case& c, const std::string& test) {
  auto full = lab08_cases::make_embedding(c.seed);
  auto built_from = lab08_cases::make_embedding(c.seed + lab08_cases::kOtherTable);
  const Tensor ids = lab08_cases::make_ids(c);
  gtl::Generator gen(c.seed + 5);
  const Tensor dy = Tensor::normal({c.batch, c.time, lab08_cases::kDim}, gen);
  nn::Context ctx;
  const std::vector<float> y_ref = full->forward(ids, ctx).to_vector();
  full->backward(ctx, dy);
  const Tensor grad_ref = full->weight().grad;
  gtl::judge::Outputs out(test);
  for (int k : lab08_cases::kTpSizes) {
    const auto n = static_cast<std::size_t>(k);
    std::vector<std::vector<float>> ys(n), grads(n);
    std::vector<std::vector<std::string>> fwd(n), bwd(n);
    run_tp(k, [&](Communicator& comm) {
      const auto call = lab08_student_call::todo3();
      VocabParallelEmbedding emb(*built_from, comm);
      const Slice mine = tp_slice(kVocab, comm.rank(), k, "vocabulary rows");
      Tensor(emb.parameters()[0].value).copy_(full->weight().value.slice(mine.begin, mine.end));
      const auto r = std::size_t(comm.rank());
      nn::Context c2;
      std::size_t mark = comm.trace()->events().size();
      ys[r] = emb.forward(ids, c2).to_vector();
      fwd[r] = collectives_since(comm, mark);
      mark = comm.trace()->events().size();
      emb.backward(c2, dy);
      bwd[r] = collectives_since(comm, mark);
      grads[r] = emb.parameters()[0].grad.to_vector();
    });
    out.record_all(ys[0]);
    for (int r = 0; r < k; ++r) {
      const std::string who =
          "TP = " + std::to_string(k) + ", rank " + std::to_string(r) + ", " + c.str();
      const Slice rows = tp_slice(kVocab, r, k, "vocabulary rows");
      EXPECT_EQ(bitwise_problem(ys[std::size_t(r)], y_ref, "the embedding's output, " + who,
                                "the vocabulary-parallel lookup: every id's row lives on exactly "
                                "one rank (in its shard, \"weight\"), and every rank needs it. The "
                                "layer was built from another table, then its shard got this "
                                "table's rows: a row from the constructor's table is not the "
                                "rank's"),
                "");
      EXPECT_EQ(
          bitwise_problem(grads[std::size_t(r)], grad_ref.slice(rows.begin, rows.end).to_vector(),
                          "the embedding's table gradient, " + who,
                          "the backward of this rank's rows, in position order"),
          "");
      // One collective whose payload is the lookup [B*T, D] once; which one is the step's.
      std::string lookup_bytes = " ";
      lookup_bytes += std::to_string(c.rows() * lab08_cases::kDim * 4);
      const std::vector<std::string>& issued = fwd[std::size_t(r)];
      const bool one_lookup = issued.size() == 1 && issued[0].size() > lookup_bytes.size() &&
                              issued[0].compare(issued[0].size() - lookup_bytes.size(),
                                                lookup_bytes.size(), lookup_bytes) == 0;
      if (k > 1) {
        EXPECT_TRUE(one_lookup)
            << who << ": the embedding's forward issued " << joined(issued)
            << ", expected one collective of the group carrying" << lookup_bytes
            << " bytes (the lookup [B*T, D] in float32, once; handout, \"The vocabulary\")";
      }
      EXPECT_TRUE(bwd[std::size_t(r)].empty())
          << who << ": the embedding's backward issued " << joined(bwd[std::size_t(r)])
          << ", expected no communication (handout, TODO 3: why can it not need any?)";
    }
  }
}

// An id or a label outside [0, V): -1 and V + 7. Every rank of a TP group of k = 1, 2 must throw
// a gtl::Error naming the value and V (256): a value that belongs to no rank's slice cannot be
// left as zeros or skipped. `call` runs the student's layer on one rank with the bad value.
std::vector<int64_t> bad_values() {
  return {-1, kVocab + 7};
}
std::string refusal_problem(const std::string& what, int64_t bad,
                            const std::function<void(Communicator&, int64_t)>& call,
                            gtl::judge::Outputs& out, const char* revisit) {
  std::string problems;
  for (int k : {1, 2}) {
    std::vector<std::string> messages(static_cast<std::size_t>(k));
    gtl::dist::RunOptions options = tp_options();
    options.timeout = std::chrono::seconds(2);  // a rank that did not refuse waits for the others
    try {
      run_tp(
          k,
          [&](Communicator& comm) {
            const auto call_scope = lab08_student_call::todo3();
            try {
              call(comm, bad);
            } catch (const gtl::Error& e) {
              messages[std::size_t(comm.rank())] = e.what();
            }
          },
          options);
    } catch (const std::exception& e) {
      problems += "TP = " + std::to_string(k) + ": the ranks failed: " + e.what() + ". ";
    }
    const std::regex names_bad("(^|[^0-9-])" + std::to_string(bad) + "([^0-9]|$)");
    const std::regex names_v("(^|[^0-9])" + std::to_string(kVocab) + "([^0-9]|$)");
    for (int r = 0; r < k; ++r) {
      const std::string& m = messages[std::size_t(r)];
      const bool refused = std::regex_search(m, names_bad) && std::regex_search(m, names_v) &&
                           m.find("not implemented") == std::string::npos;
      out.record(refused);
      if (!refused)
        problems += "TP = " + std::to_string(k) + ", rank " + std::to_string(r) + ": " + what +
                    " " + std::to_string(bad) + ": expected a gtl::Error naming " +
                    std::to_string(bad) + " and V = " + std::to_string(kVocab) + ", got " +
                    (m.empty() ? std::string("no error") : "\"" + m + "\"") + ". ";
    }
  }
  return problems.empty() ? "" : problems + "Revisit " + revisit;
}

TEST(VocabParallel, EmbeddingEqualsTheUnshardedEmbeddingBitwise) {
  const std::string test = "VocabParallel.EmbeddingEqualsTheUnshardedEmbeddingBitwise";
  expect_embedding_equals_unsharded(Case{2, 7, 13}, test + "Fixed");
  expect_embedding_equals_unsharded(lab08_cases::seeded_case(test), test);
}

// 3a: an id outside [0, V) on any rank's input is refused by every rank, naming it and V.
TEST(VocabParallel, EmbeddingRefusesAnIdOutsideTheVocabulary) {
  gtl::judge::Outputs out("VocabParallel.EmbeddingRefusesAnIdOutsideTheVocabulary");
  auto full = lab08_cases::make_embedding(13);
  for (int64_t bad : bad_values()) {
    Tensor ids = lab08_cases::make_ids(Case{2, 5, 13});
    ids.data<int64_t>()[3] = bad;
    EXPECT_EQ(refusal_problem(
                  "the id", bad,
                  [&](Communicator& comm, int64_t) {
                    VocabParallelEmbedding emb(*full, comm);
                    nn::Context ctx;
                    emb.forward(ids, ctx);
                  },
                  out, "3a: every rank sees every id; one outside [0, V) is on no rank's slice"),
              "");
  }
}

struct LossRank {
  float loss = 0;
  std::vector<float> dlogits;
  std::vector<std::string> forward_comm, backward_comm;
  int64_t peak_growth = 0;
};

// Rank r gets its columns of the full logits; the loss, its gradient, its collectives and how
// far its allocator's peak rose above what it held before the loss.
std::vector<LossRank> run_loss(const Tensor& logits, const Tensor& labels, int k) {
  std::vector<LossRank> ranks(static_cast<std::size_t>(k));
  gtl::dist::RunOptions options = tp_options();
  for (int r = 0; r < k; ++r) options.allocators.push_back(gtl::make_cpu_allocator());
  run_tp(
      k,
      [&](Communicator& comm) {
        const auto r = std::size_t(comm.rank());
        const Slice cols = tp_slice(kVocab, comm.rank(), k, "vocabulary");
        const Tensor local = lab08_cases::columns(logits, cols.begin, cols.end);
        const Tensor my_labels = labels.clone();
        auto alloc = options.allocators[r];
        alloc->reset_peak_stats();
        const int64_t before = alloc->stats().allocated_bytes;
        const auto call = lab08_student_call::todo3();
        VocabParallelCrossEntropy loss(comm);
        nn::Context ctx;
        std::size_t mark = comm.trace()->events().size();
        ranks[r].loss = loss.forward(local, my_labels, ctx).item();
        ranks[r].forward_comm = collectives_since(comm, mark);
        mark = comm.trace()->events().size();
        Tensor d = loss.backward(ctx, 1.f);
        ranks[r].backward_comm = collectives_since(comm, mark);
        ranks[r].peak_growth = alloc->stats().peak_allocated_bytes - before;
        ranks[r].dlogits = d.to_vector();
      },
      options);
  return ranks;
}

void expect_loss_equals_unsharded(const Case& c, float low, float high, const std::string& test) {
  const auto [logits, labels] = lab08_cases::make_logits(c, low, high);
  const double loss_ref = gtl::ops::cross_entropy(logits, labels).item();
  const Tensor d_ref = gtl::ops::cross_entropy_backward(logits, labels, 1.f);
  gtl::judge::Outputs out(test);
  for (int k : lab08_cases::kTpSizes) {
    const std::vector<LossRank> ranks = run_loss(logits, labels, k);
    out.record(ranks[0].loss);
    for (int r = 0; r < k; ++r) {
      const LossRank& got = ranks[std::size_t(r)];
      const std::string who = "TP = " + std::to_string(k) + ", rank " + std::to_string(r) +
                              ", logits in [" + show(low) + ", " + show(high) + "), " + c.str();
      EXPECT_TRUE(std::fabs(double(got.loss) - loss_ref) <=
                  lab08_cases::loss_bound(loss_ref, c.rows()))
          << who << ": the loss expected " << show(loss_ref) << " within "
          << show(lab08_cases::loss_bound(loss_ref, c.rows())) << ", got " << show(got.loss)
          << (r > 0 && got.loss != ranks[0].loss
                  ? " (and rank 0 got " + show(ranks[0].loss) +
                        ": the ranks disagree, so one per-row number is still a local one)"
                  : std::string())
          << ". Revisit each of the three per-row numbers every rank must share (the row's max, "
             "the label's logit, the sum of exp over the whole row): which reduction gives each, "
             "and what each rank contributes (handout, \"The vocabulary\")";
      const Slice cols = tp_slice(kVocab, r, k, "vocabulary");
      const std::vector<float> want = lab08_cases::columns(d_ref, cols.begin, cols.end).to_vector();
      std::vector<double> bound(want.size());
      const int64_t width = cols.size();
      for (std::size_t i = 0; i < want.size(); ++i) {
        const int64_t row = int64_t(i) / width, col = cols.begin + int64_t(i) % width;
        bound[i] = lab08_cases::dlogit_bound(want[i], labels.data<int64_t>()[row] == col, c.rows());
      }
      EXPECT_EQ(bounded_problem(got.dlogits, want, bound, "dlogits, " + who,
                                "the backward: d loss / d logit on this rank's columns, from "
                                "what forward saved (handout, \"The vocabulary\")"),
                "");
    }
  }
}

TEST(VocabParallel, LossEqualsTheUnshardedCrossEntropy) {
  const std::string test = "VocabParallel.LossEqualsTheUnshardedCrossEntropy";
  expect_loss_equals_unsharded(Case{2, 5, 17}, -4.f, 4.f, test + "Fixed");
  expect_loss_equals_unsharded(lab08_cases::seeded_case(test), -4.f, 4.f, test);
}

// 3b: a label outside [0, V), V = k * width, is refused by every rank, naming it and V.
TEST(VocabParallel, LossRefusesALabelOutsideTheVocabulary) {
  gtl::judge::Outputs out("VocabParallel.LossRefusesALabelOutsideTheVocabulary");
  const Case c{2, 5, 17};
  const auto [logits, good_labels] = lab08_cases::make_logits(c, -4.f, 4.f);
  for (int64_t bad : bad_values()) {
    Tensor labels = good_labels.clone();
    labels.data<int64_t>()[2] = bad;
    EXPECT_EQ(refusal_problem(
                  "the label", bad,
                  [&](Communicator& comm, int64_t) {
                    const int k = comm.world_size();
                    const Slice cols = tp_slice(kVocab, comm.rank(), k, "vocabulary");
                    const Tensor local = lab08_cases::columns(logits, cols.begin, cols.end);
                    VocabParallelCrossEntropy loss(comm);
                    nn::Context ctx;
                    loss.forward(local, labels, ctx);
                  },
                  out, "3b: V is k times the local width; a label outside [0, V) has no logit"),
              "");
  }
}

// Logits of 90 to 100: exp overflows without a stabiliser, and a stabiliser that is not the row's
// true max (a sum of the ranks' maxima, a local max) sends every exp to 0 or past the range.
TEST(VocabParallel, LargeLogitsNeedTheGlobalMaxAsStabiliser) {
  const std::string test = "VocabParallel.LargeLogitsNeedTheGlobalMaxAsStabiliser";
  expect_loss_equals_unsharded(lab08_cases::seeded_case(test), 90.f, 100.f, test);
}

// Three all-reduces of N float32 each in forward (max, label logit, sum of exp), none backward;
// and no rank's allocator ever rises by more than one [N, V/k] buffer plus per-row vectors: the
// full [N, V] logits (k times that) never exist on a rank.
TEST(VocabParallel, NeverAllocatesTheFullLogitsAndSendsThreeRowVectors) {
  const std::string test = "VocabParallel.NeverAllocatesTheFullLogitsAndSendsThreeRowVectors";
  const Case c = lab08_cases::seeded_case(test);
  const auto [logits, labels] = lab08_cases::make_logits(c, -4.f, 4.f);
  gtl::judge::Outputs out(test);
  for (int k : {2, 4}) {
    const std::vector<LossRank> ranks = run_loss(logits, labels, k);
    const int64_t n = c.rows(), width = kVocab / k;
    const int64_t budget = n * width * 4 + 16 * n * 4;
    const std::string row = "all_reduce " + std::to_string(n * 4);
    const std::vector<std::string> want = {row, row, row};
    for (int r = 0; r < k; ++r) {
      const LossRank& got = ranks[std::size_t(r)];
      const std::string who =
          "TP = " + std::to_string(k) + ", rank " + std::to_string(r) + ", " + c.str();
      out.record(got.peak_growth);
      EXPECT_LE(got.peak_growth, budget)
          << who << ": the loss's forward and backward raised the rank's allocator peak by "
          << got.peak_growth << " bytes, expected at most " << budget << " (one [N, V/k] float "
          << "buffer, " << n * width * 4 << " bytes, plus per-row vectors); the full logits are "
          << n * kVocab * 4 << " bytes. Revisit: never gather the logits, all-reduce three "
          << "numbers per row";
      EXPECT_EQ(got.forward_comm, want)
          << who << ": the loss's forward issued " << joined(got.forward_comm) << ", expected "
          << joined(want) << " (max, label logit, sum of exp)";
      EXPECT_TRUE(got.backward_comm.empty())
          << who << ": the loss's backward issued " << joined(got.backward_comm)
          << ", expected nothing: what forward shared is all backward needs";
    }
  }
}

}  // namespace
