// The judge of lab 08 (docs/grader.md, "The judge"): built from the course alone (the tests'
// shared cases and the core), never from the student's files or the harness that calls them.
// gtl-grade runs `lab08_judge <check>` after the check's tests; each case reads what those tests
// recorded for the inputs the grading seed drew and recomputes it here:
//   parallel-mlp              the core's unsharded fc1 -> GELU -> fc2 (bitwise at TP = 1, within
//                             the contraction bound of lab08_cases.h at TP = 2, 4)
//   parallel-mlp-traffic      one collective forward and one backward on every rank
//   parallel-attention        the core's unsharded attention (bitwise at TP = 1, within the bound
//                             at TP = 2, 4); the refusal of 6 heads on 4 ranks
//   vocab-parallel-embedding  the core's TokenEmbedding, bit for bit
//   vocab-parallel-loss       ops::cross_entropy on the full logits, within the loss bound
//   vocab-parallel-memory     every rank's peak within one [N, V/k] buffer plus row vectors
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gtl/ops/cross_entropy.h"
#include "gtl/ops/math_mode.h"
#include "gtl_judge.h"
#include "lab08_cases.h"

namespace {

using gtl::Tensor;
using gtl::judge::Recorded;
using gtl::judge::Rejection;
using gtl::judge::show;
using lab08_cases::Case;
namespace nn = gtl::nn;

void expect_bits(Recorded& r, const std::vector<float>& want, const std::string& what) {
  const auto got = r.sequence<float>(what, want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      throw Rejection(r.test() + ": " + what + ", element " + std::to_string(i) + " is " +
                      show(got[i]) + ", the judge computes " + show(want[i]) + " (bit for bit)");
}
void expect_within(Recorded& r, const std::vector<float>& want, const std::vector<double>& bound,
                   const std::string& what) {
  const auto got = r.sequence<float>(what, want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(double(got[i]) - double(want[i])) <= bound[i]))
      throw Rejection(r.test() + ": " + what + ", element " + std::to_string(i) + " is " +
                      show(got[i]) + ", the judge computes " + show(want[i]) + " within " +
                      show(bound[i]));
}
void expect_outputs(Recorded& r, int k, const std::vector<float>& want,
                    const std::vector<double>& bound, const std::string& what) {
  const std::string at = what + " at TP = " + std::to_string(k);
  if (k == 1)
    expect_bits(r, want, at);
  else
    expect_within(r, want, bound, at);
}

// ---- TODO 1
// ---------------------------------------------------------------------------------------

void judge_mlp(const std::string& test, const Case& c) {
  Recorded r(test);
  gtl::ops::ScopedRowInvariant row_invariant(true);
  const lab08_cases::MlpCase m = lab08_cases::make_mlp_case(c);
  gtl::nn::GELU gelu;
  nn::Context c1, c2, c3;
  const Tensor h = gelu.forward(m.fc1->forward(m.x, c1), c2);
  const Tensor y = m.fc2->forward(h, c3);
  const Tensor dh = gelu.backward(c2, m.fc2->backward(c3, m.dy));
  const Tensor dx = m.fc1->backward(c1, dh);
  const auto yb =
      lab08_cases::contraction_bound(h, m.fc2->parameters()[0].value, m.fc2->parameters()[1].value);
  const auto dxb = lab08_cases::contraction_bound(dh, m.fc1->parameters()[0].value, Tensor(), true);
  for (int k : lab08_cases::kTpSizes) {
    expect_outputs(r, k, y.to_vector(), yb, "the MLP's output (" + c.str() + ")");
    expect_outputs(r, k, dx.to_vector(), dxb, "the MLP's dx (" + c.str() + ")");
  }
}

std::string parallel_mlp() {
  judge_mlp("ParallelLinear.MlpEqualsTheUnshardedMlpAtAFixedShape", Case{2, 5, 7});
  const std::string seeded = "ParallelLinear.MlpEqualsTheUnshardedMlpAtSeededShapes";
  judge_mlp(seeded, lab08_cases::seeded_case(seeded));
  return "every output and dx the unsharded MLP's (bitwise at TP = 1, within the bound else)";
}

std::string parallel_mlp_traffic() {
  const std::string test = "ParallelLinear.OneAllReduceOfNxDForwardAndOneBackward";
  Recorded r(test);
  const Case c = lab08_cases::seeded_case(test);
  for (int k : {2, 4}) {
    // The ring sends 2 (k - 1) / k of an all-reduce's bytes from every rank.
    const int64_t ring = 2 * (k - 1) * c.rows() * lab08_cases::kDim * 4 / k;
    for (int rank = 0; rank < k; ++rank) {
      const std::string who = "TP = " + std::to_string(k) + ", rank " + std::to_string(rank);
      if (r.next<std::size_t>(who + " forward") != 1 || r.next<std::size_t>(who + " backward") != 1)
        throw Rejection(r.test() + ": " + who + " did not issue one collective each way");
      const auto fwd = r.next<int64_t>(who + " forward bytes"),
                 bwd = r.next<int64_t>(who + " backward bytes");
      if (fwd != ring || bwd != ring)
        throw Rejection(r.test() + ": " + who + " sent " + std::to_string(fwd) + " and " +
                        std::to_string(bwd) + " bytes, the judge computes " + std::to_string(ring) +
                        " each way (" + c.str() + ")");
    }
  }
  return "one all-reduce of N x D forward and one backward on every rank, the ring's bytes";
}

// ---- TODO 2
// ---------------------------------------------------------------------------------------

void judge_attention(const std::string& test, const Case& c) {
  Recorded r(test);
  gtl::ops::ScopedRowInvariant row_invariant(true);
  auto full = lab08_cases::make_attention(c.seed, lab08_cases::kDim, lab08_cases::kHeads);
  const auto [x, dy] = lab08_cases::attention_data(c);
  nn::Context ctx;
  const std::vector<float> y = full->forward(x, ctx).to_vector();
  nn::Context qctx;
  const Tensor qkv = full->children()[0]->forward(x.reshape({c.rows(), lab08_cases::kDim}), qctx);
  double vmax = 0;
  const std::vector<float> q = qkv.to_vector();
  for (std::size_t i = 0; i < q.size(); ++i)
    if (int64_t(i) % (3 * lab08_cases::kDim) >= 2 * lab08_cases::kDim)
      vmax = std::max(vmax, std::fabs(double(q[i])));
  const auto p = full->parameters();
  std::vector<double> bound(y.size());
  for (std::size_t i = 0; i < y.size(); ++i) {
    const int64_t o = int64_t(i) % lab08_cases::kDim;
    double s = std::fabs(double(p[3].value.data<float>()[o]));
    for (int64_t j = 0; j < lab08_cases::kDim; ++j)
      s += vmax * std::fabs(double(p[2].value.data<float>()[o * lab08_cases::kDim + j]));
    bound[i] = 2.0 * double(lab08_cases::kDim + 2) * lab08_cases::kU * s;
  }
  for (int k : lab08_cases::kTpSizes)
    expect_outputs(r, k, y, bound, "the attention's output (" + c.str() + ")");
}

std::string parallel_attention() {
  judge_attention("ParallelAttention.EqualsTheUnshardedAttentionAtAFixedShape", Case{2, 6, 5});
  const std::string seeded = "ParallelAttention.EqualsTheUnshardedAttentionAtSeededShapes";
  judge_attention(seeded, lab08_cases::seeded_case(seeded));
  Recorded r("ParallelAttention.HeadsNotDivisibleByTheTpSizeAreRefused");
  if (!r.next<bool>("the refusal of 6 heads on 4 ranks"))
    throw Rejection(r.test() + ": 6 heads on 4 ranks were not refused");
  return "every output the unsharded attention's; 6 heads on 4 ranks refused";
}

// ---- TODO 3
// ---------------------------------------------------------------------------------------

void judge_embedding(const std::string& test, const Case& c) {
  Recorded r(test);
  auto full = lab08_cases::make_embedding(c.seed);
  nn::Context ctx;
  const std::vector<float> y = full->forward(lab08_cases::make_ids(c), ctx).to_vector();
  for (int k : lab08_cases::kTpSizes)
    expect_bits(r, y, "the embedding at TP = " + std::to_string(k) + " (" + c.str() + ")");
}

std::string vocab_parallel_embedding() {
  const std::string test = "VocabParallel.EmbeddingEqualsTheUnshardedEmbeddingBitwise";
  judge_embedding(test + "Fixed", Case{2, 7, 13});
  judge_embedding(test, lab08_cases::seeded_case(test));
  return "every lookup the unsharded embedding's, bit for bit";
}

void judge_loss(const std::string& test, const Case& c, float low, float high) {
  Recorded r(test);
  const auto [logits, labels] = lab08_cases::make_logits(c, low, high);
  const double want = gtl::ops::cross_entropy(logits, labels).item();
  for (int k : lab08_cases::kTpSizes) {
    const float got = r.next<float>("the loss at TP = " + std::to_string(k));
    if (!(std::fabs(double(got) - want) <= lab08_cases::loss_bound(want, c.rows())))
      throw Rejection(r.test() + ": the loss at TP = " + std::to_string(k) + " (" + c.str() +
                      ") is " + show(got) + ", the judge computes " + show(want));
  }
}

std::string vocab_parallel_loss() {
  const std::string test = "VocabParallel.LossEqualsTheUnshardedCrossEntropy";
  judge_loss(test + "Fixed", Case{2, 5, 17}, -4.f, 4.f);
  judge_loss(test, lab08_cases::seeded_case(test), -4.f, 4.f);
  const std::string large = "VocabParallel.LargeLogitsNeedTheGlobalMaxAsStabiliser";
  judge_loss(large, lab08_cases::seeded_case(large), 90.f, 100.f);
  return "every loss the full cross-entropy's within the bound";
}

std::string vocab_parallel_memory() {
  const std::string test = "VocabParallel.NeverAllocatesTheFullLogitsAndSendsThreeRowVectors";
  Recorded r(test);
  const Case c = lab08_cases::seeded_case(test);
  for (int k : {2, 4}) {
    const int64_t budget = c.rows() * (lab08_cases::kVocab / k) * 4 + 16 * c.rows() * 4;
    for (int rank = 0; rank < k; ++rank) {
      const auto peak = r.next<int64_t>("a rank's peak");
      if (peak > budget)
        throw Rejection(r.test() + ": TP = " + std::to_string(k) + ", rank " +
                        std::to_string(rank) + " raised its peak by " + std::to_string(peak) +
                        " bytes, over the budget of " + std::to_string(budget));
    }
  }
  return "every rank's peak within one [N, V/k] buffer and row vectors";
}

}  // namespace

int main(int argc, char** argv) {
  return gtl::judge::run(argc, argv,
                         {{"parallel-mlp", parallel_mlp},
                          {"parallel-mlp-traffic", parallel_mlp_traffic},
                          {"parallel-attention", parallel_attention},
                          {"vocab-parallel-embedding", vocab_parallel_embedding},
                          {"vocab-parallel-loss", vocab_parallel_loss},
                          {"vocab-parallel-memory", vocab_parallel_memory}});
}
