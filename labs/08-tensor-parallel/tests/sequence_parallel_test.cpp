// TODO 4: sequence parallelism. The all-gather / reduce-scatter pair along the sequence (4a), and
// the residual MLP with its LayerNorm, fc2's bias and residual on each rank's positions (4b),
// on k = 1, 2, 3, 4 in-process ranks in the core's deterministic mode: against the core's unsharded
// ResidualMLP, bit for bit wherever no sum is cut (TP = 1, the weight gradients' slices), within
// the handout's derived bounds where TP and sequence parallelism cut a sum (sp_bounds; the judge
// compares those with the step-1 computation bit for bit); the exact bytes of every collective;
// the activation memory each rank still holds after forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "gtl/distributed/communicator.h"
#include "gtl/memory/allocator.h"
#include "gtl/ops/elementwise.h"
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
using lab08_cases::kSpDim;

// ---- 4a: the pair ------------------------------------------------------------------------------

void expect_pair(const Case& c, const std::string& test) {
  const Tensor whole = lab08_cases::sp_whole(c);
  const int64_t bytes = c.rows() * kSpDim * 4;
  gtl::judge::Outputs out(test);
  for (int k : lab08_cases::kSpTpSizes) {
    // The reduction the reduce-scatter must deliver, in rank order as the deterministic one adds.
    Tensor sum = lab08_cases::sp_partial(c, 0);
    for (int r = 1; r < k; ++r)
      gtl::dist::reduce_into(sum, lab08_cases::sp_partial(c, r), gtl::dist::ReduceOp::Sum);
    const auto n = static_cast<std::size_t>(k);
    std::vector<std::vector<float>> gathered(n), scattered(n);
    std::vector<std::vector<std::string>> gather_comm(n), scatter_comm(n);
    std::vector<int64_t> gather_sent(n), scatter_sent(n);
    run_tp(k, [&](Communicator& comm) {
      const auto call = lab08_student_call::todo4();
      const auto r = std::size_t(comm.rank());
      const Slice mine = tp_slice(c.time, comm.rank(), k, "positions");
      const Tensor shard = lab08_cases::positions(whole, mine.begin, mine.end);
      std::size_t mark = comm.trace()->events().size();
      gathered[r] = gather_sequence(shard, comm).to_vector();
      gather_comm[r] = collectives_since(comm, mark);
      gather_sent[r] = bytes_sent_since(comm, mark);
      mark = comm.trace()->events().size();
      scattered[r] = scatter_sequence(lab08_cases::sp_partial(c, comm.rank()), comm).to_vector();
      scatter_comm[r] = collectives_since(comm, mark);
      scatter_sent[r] = bytes_sent_since(comm, mark);
    });
    out.record_all(gathered[0]);
    for (int r = 0; r < k; ++r) {
      const auto i = std::size_t(r);
      const std::string who =
          "TP = " + std::to_string(k) + ", rank " + std::to_string(r) + ", " + c.str();
      const Slice mine = tp_slice(c.time, r, k, "positions");
      out.record_all(scattered[i]);
      EXPECT_EQ(bitwise_problem(gathered[i], whole.to_vector(), "gather_sequence, " + who,
                                "the all-gather's layout: rank q's [B, T/k, D] holds positions "
                                "tp_slice(T) of EVERY sequence, not one block of rows"),
                "");
      EXPECT_EQ(bitwise_problem(scattered[i],
                                lab08_cases::positions(sum, mine.begin, mine.end).to_vector(),
                                "scatter_sequence, " + who,
                                "the reduce-scatter: this rank's positions (tp_slice(T) of EVERY "
                                "sequence) of the SUM over the ranks' [B, T, D] inputs"),
                "");
      const std::vector<std::string> gather_want = {"all_gather " + std::to_string(bytes)};
      const std::vector<std::string> scatter_want = {"reduce_scatter " + std::to_string(bytes)};
      const int64_t half = (k - 1) * bytes / k;  // each half of the ring all-reduce
      EXPECT_EQ(gather_comm[i], gather_want)
          << who << ": gather_sequence issued " << joined(gather_comm[i]) << ", expected "
          << joined(gather_want) << ". Revisit 4a: one all-gather of the whole [B, T, D]";
      EXPECT_EQ(scatter_comm[i], scatter_want)
          << who << ": scatter_sequence issued " << joined(scatter_comm[i]) << ", expected "
          << joined(scatter_want) << ". Revisit 4a: one reduce-scatter, not an all-reduce";
      EXPECT_EQ(gather_sent[i], half) << who << ": bytes sent by gather_sequence";
      EXPECT_EQ(scatter_sent[i], half) << who << ": bytes sent by scatter_sequence";
      out.record(gather_comm[i].size() == 1 && gather_comm[i] == gather_want);
      out.record(scatter_comm[i].size() == 1 && scatter_comm[i] == scatter_want);
      out.record(gather_sent[i]);
      out.record(scatter_sent[i]);
    }
  }
}

TEST(SequenceParallel, PairKeepsTheSequenceLayoutAtAFixedShape) {
  expect_pair(Case{2, 12, 3}, "SequenceParallel.PairKeepsTheSequenceLayoutAtAFixedShape");
}

TEST(SequenceParallel, PairKeepsTheSequenceLayoutAtSeededShapes) {
  const std::string test = "SequenceParallel.PairKeepsTheSequenceLayoutAtSeededShapes";
  expect_pair(lab08_cases::seeded_sp_case(test), test);
}

// T not divisible by k: a shard cut short by one (T/k rounded down) loses positions, one rounded
// up reads past the sequence. This lab refuses, before any rank communicates.
TEST(SequenceParallel, PairRefusesASequenceTheGroupCannotSplit) {
  gtl::judge::Outputs out("SequenceParallel.PairRefusesASequenceTheGroupCannotSplit");
  for (const auto& [t, k] : std::vector<std::pair<int64_t, int>>{{6, 4}, {7, 2}, {10, 3}}) {
    std::vector<std::string> messages(static_cast<std::size_t>(k));
    std::vector<std::vector<std::string>> comm_issued(static_cast<std::size_t>(k));
    run_tp(k, [&](Communicator& comm) {
      const auto r = std::size_t(comm.rank());
      const std::size_t mark = comm.trace()->events().size();
      try {
        scatter_sequence(Tensor::zeros({2, t, kSpDim}), comm);
      } catch (const gtl::Error& e) {
        messages[r] = e.what();
      }
      comm_issued[r] = collectives_since(comm, mark);
    });
    const std::regex names_t("(^|[^0-9])" + std::to_string(t) + "([^0-9]|$)");
    const std::regex names_k("(^|[^0-9])" + std::to_string(k) + "([^0-9]|$)");
    for (int r = 0; r < k; ++r) {
      const std::string& m = messages[std::size_t(r)];
      const bool refused = std::regex_search(m, names_t) && std::regex_search(m, names_k) &&
                           m.find("not implemented") == std::string::npos &&
                           comm_issued[std::size_t(r)].empty();
      out.record(refused);
      EXPECT_TRUE(refused) << "T = " << t << " on " << k << " ranks, rank " << r
                           << ": expected a gtl::Error naming " << t << " and " << k
                           << " before any collective, got \"" << m << "\" after "
                           << joined(comm_issued[std::size_t(r)])
                           << ". Revisit the refusal in scatter_sequence (tp_slice): a shard of "
                           << t / k << " or " << t / k + 1 << " positions cuts the sequence wrong";
    }
  }
}

// ---- 4b: the sequence-parallel MLP -------------------------------------------------------------

struct SpRank {
  std::vector<float> y, dx;
  std::vector<std::vector<float>> grads;  // ln.w, ln.b, fc1.w, fc1.b, fc2.w, fc2.b
  std::vector<std::string> forward_comm, backward_comm;
  int64_t forward_sent = 0, backward_sent = 0;
  gtl::dist::OpCounters gathers, scatters, reduces;
  int64_t retained = 0;  // bytes the rank's allocator still holds after forward (x_r included)
};

std::vector<SpRank> run_sp(const lab08_cases::SpCase& m, int k) {
  std::vector<SpRank> ranks(static_cast<std::size_t>(k));
  gtl::dist::RunOptions options = tp_options();
  for (int r = 0; r < k; ++r) options.allocators.push_back(gtl::make_cpu_allocator());
  const int64_t t = m.x.size(1);
  run_tp(
      k,
      [&](Communicator& comm) {
        const auto r = std::size_t(comm.rank());
        SpRank& got = ranks[r];
        const auto call = lab08_student_call::todo4();
        SequenceParallelMLP mlp(*m.full, comm);
        const Slice mine = tp_slice(t, comm.rank(), k, "positions");
        const Tensor dy = lab08_cases::positions(m.dy, mine.begin, mine.end);
        comm.reset_counters();
        const int64_t before = options.allocators[r]->stats().allocated_bytes;
        const Tensor x = lab08_cases::positions(m.x, mine.begin, mine.end);
        nn::Context ctx;
        std::size_t mark = comm.trace()->events().size();
        const Tensor y = mlp.forward(x, ctx);
        got.retained = options.allocators[r]->stats().allocated_bytes - before;
        got.forward_comm = collectives_since(comm, mark);
        got.forward_sent = bytes_sent_since(comm, mark);
        got.y = y.to_vector();
        mark = comm.trace()->events().size();
        got.dx = mlp.backward(ctx, dy).to_vector();
        got.backward_comm = collectives_since(comm, mark);
        got.backward_sent = bytes_sent_since(comm, mark);
        got.gathers = comm.counters("all_gather");
        got.scatters = comm.counters("reduce_scatter");
        got.reduces = comm.counters("all_reduce");
        for (const auto& p : mlp.parameters()) got.grads.push_back(p.grad.to_vector());
      },
      options);
  return ranks;
}

void expect_sp_mlp(const Case& c, const std::string& test) {
  const lab08_cases::SpCase m = lab08_cases::make_sp_case(c);
  const Unsharded ref = run_unsharded(m);
  gtl::judge::Outputs out(test);
  const char* names[] = {"ln.weight", "ln.bias",    "fc1.weight",
                         "fc1.bias",  "fc2.weight", "fc2.bias"};
  const int replicated[] = {0, 1, 5};
  for (int k : lab08_cases::kSpTpSizes) {
    const std::vector<SpRank> ranks = run_sp(m, k);
    const SpBounds bound = sp_bounds(m, ref, k);
    for (int r = 0; r < k; ++r) {
      const SpRank& got = ranks[std::size_t(r)];
      const std::string who =
          "TP = " + std::to_string(k) + ", rank " + std::to_string(r) + ", " + c.str();
      const Slice mine = tp_slice(c.time, r, k, "positions");
      const Slice hid = tp_slice(lab08_cases::kSpHidden, r, k, "hidden");
      out.record_all(got.y);
      out.record_all(got.dx);
      const std::string y_hint =
          "the forward: which of its operations may run on this rank's positions alone, and which "
          "need every position (and where fc2's bias and the residual go)";
      const std::string dx_hint =
          "the backward of each collective of the forward: work out on one element which "
          "collective it is (handout, \"Sequence parallelism\")";
      const std::vector<float> want_y = rank_rows(ref.y, c, mine);
      const std::vector<float> want_dx = rank_rows(ref.dx, c, mine);
      if (k == 1) {
        EXPECT_EQ(bitwise_problem(got.y, want_y, "y at this rank's positions, " + who, y_hint), "");
        EXPECT_EQ(bitwise_problem(got.dx, want_dx, "dx at this rank's positions, " + who, dx_hint),
                  "");
      } else {
        EXPECT_EQ(bounded_problem(got.y, want_y, rank_bounds(bound.y, c, mine),
                                  "y at this rank's positions, " + who, y_hint),
                  "");
        EXPECT_EQ(bounded_problem(got.dx, want_dx, rank_bounds(bound.dx, c, mine),
                                  "dx at this rank's positions, " + who, dx_hint),
                  "");
      }
      ASSERT_EQ(got.grads.size(), 6u) << who << ": the module's parameters";
      EXPECT_EQ(bitwise_problem(got.grads[2], ref.grads[2].slice(hid.begin, hid.end).to_vector(),
                                "fc1's weight gradient, " + who,
                                "fc1's backward on the gathered (whole) LayerNorm output"),
                "");
      EXPECT_EQ(bitwise_problem(got.grads[3], ref.grads[3].slice(hid.begin, hid.end).to_vector(),
                                "fc1's bias gradient, " + who, "fc1's backward"),
                "");
      EXPECT_EQ(bitwise_problem(got.grads[4],
                                lab08_cases::columns(ref.grads[4], hid.begin, hid.end).to_vector(),
                                "fc2's weight gradient, " + who,
                                "fc2's backward on the gathered (whole) dy"),
                "");
      const std::string sum_hint =
          "the replicated parameters: this rank's backward sees only its positions, and the "
          "gradient sums all B*T of them, the same on every rank";
      for (std::size_t q = 0; q < 3; ++q) {
        const auto p = std::size_t(replicated[q]);
        const std::string what = std::string(names[p]) + "'s gradient, " + who;
        if (k == 1)
          EXPECT_EQ(bitwise_problem(got.grads[p], ref.grads[p].to_vector(), what, sum_hint), "");
        else
          EXPECT_EQ(bounded_problem(got.grads[p], ref.grads[p].to_vector(), bound.replicated[q],
                                    what, sum_hint),
                    "");
        EXPECT_EQ(
            bitwise_problem(got.grads[p], ranks[0].grads[p], what + " vs rank 0",
                            "a replicated parameter must get the same gradient on every rank"),
            "");
        out.record_all(got.grads[p]);
      }
    }
  }
}

TEST(SequenceParallel, MlpEqualsTheTpMlpAtAFixedShape) {
  expect_sp_mlp(Case{2, 12, 11}, "SequenceParallel.MlpEqualsTheTpMlpAtAFixedShape");
}

TEST(SequenceParallel, MlpEqualsTheTpMlpAtSeededShapes) {
  const std::string test = "SequenceParallel.MlpEqualsTheTpMlpAtSeededShapes";
  expect_sp_mlp(lab08_cases::seeded_sp_case(test), test);
}

// Gradient accumulation (two micro-batches, the second with GradMode::Accumulate): every bias and
// LayerNorm gradient after the two passes is its single-pass value doubled, bit for bit (x + x is
// exact; the weight gradients accumulate inside the GEMM, as nn::Linear's do, and round
// differently). A replicated gradient that is summed across the ranks AFTER accumulating counts
// the first pass k times.
TEST(SequenceParallel, MlpAccumulatesEveryGradientOnce) {
  const std::string test = "SequenceParallel.MlpAccumulatesEveryGradientOnce";
  const Case c = lab08_cases::seeded_sp_case(test);
  const lab08_cases::SpCase m = lab08_cases::make_sp_case(c);
  gtl::judge::Outputs out(test);
  const char* names[] = {"ln.weight", "ln.bias",    "fc1.weight",
                         "fc1.bias",  "fc2.weight", "fc2.bias"};
  for (int k : {2, 3}) {
    const auto n = static_cast<std::size_t>(k);
    std::vector<std::vector<std::vector<float>>> once(n), twice(n);
    run_tp(k, [&](Communicator& comm) {
      const auto r = std::size_t(comm.rank());
      const auto call = lab08_student_call::todo4();
      SequenceParallelMLP mlp(*m.full, comm);
      const Slice mine = tp_slice(c.time, comm.rank(), k, "positions");
      const Tensor x = lab08_cases::positions(m.x, mine.begin, mine.end);
      const Tensor dy = lab08_cases::positions(m.dy, mine.begin, mine.end);
      for (gtl::nn::GradMode mode : {gtl::nn::GradMode::Overwrite, gtl::nn::GradMode::Accumulate}) {
        nn::Context ctx;
        mlp.forward(x, ctx);
        mlp.backward(ctx, dy, mode);
        auto& into = mode == gtl::nn::GradMode::Overwrite ? once[r] : twice[r];
        for (const auto& p : mlp.parameters()) into.push_back(p.grad.to_vector());
      }
    });
    for (int r = 0; r < k; ++r) {
      const auto i = std::size_t(r);
      ASSERT_EQ(twice[i].size(), 6u) << "the module's parameters";
      for (std::size_t p : {0, 1, 3, 5}) {
        std::vector<float> doubled = once[i][p];
        for (float& v : doubled) v += v;
        out.record(bitwise_problem(twice[i][p], doubled, "", "").empty());
        EXPECT_EQ(
            bitwise_problem(twice[i][p], doubled,
                            std::string(names[p]) +
                                "'s gradient after two passes (the second "
                                "accumulating), TP = " +
                                std::to_string(k) + ", rank " + std::to_string(r) + ", " + c.str(),
                            "`mode`: sum this pass's contribution across the ranks first, "
                            "then accumulate it"),
            "");
      }
    }
  }
}

// The all-reduce of step 1 split into its halves: forward an all-gather then a reduce-scatter,
// each of the whole [B*T, D] and each sending (k - 1)/k of it, the ring all-reduce's bytes in
// all; backward the same two, and one all-reduce of D floats per replicated gradient. From the
// trace (the order and the payload of each call) and the counters (the totals).
TEST(SequenceParallel, TrafficIsTheAllReducesBytesInTwoHalves) {
  const std::string test = "SequenceParallel.TrafficIsTheAllReducesBytesInTwoHalves";
  const Case c = lab08_cases::seeded_sp_case(test);
  const lab08_cases::SpCase m = lab08_cases::make_sp_case(c);
  gtl::judge::Outputs out(test);
  const int64_t bytes = c.rows() * kSpDim * 4;
  const std::string gather = "all_gather " + std::to_string(bytes);
  const std::string scatter = "reduce_scatter " + std::to_string(bytes);
  const std::string grad = "all_reduce " + std::to_string(kSpDim * 4);
  for (int k : {2, 3, 4}) {
    const std::vector<SpRank> ranks = run_sp(m, k);
    const int64_t ring = 2 * (k - 1) * bytes / k;  // what step 1's all-reduce sends per rank
    for (int r = 0; r < k; ++r) {
      const SpRank& got = ranks[std::size_t(r)];
      const std::string who =
          "TP = " + std::to_string(k) + ", rank " + std::to_string(r) + ", " + c.str();
      const std::vector<std::string> fwd_want = {gather, scatter};
      EXPECT_EQ(got.forward_comm, fwd_want)
          << who << ": the forward issued " << joined(got.forward_comm) << ", expected "
          << joined(fwd_want) << ". Revisit 4b: where the rank's positions and the whole "
          << "sequence meet, and what each side holds there (handout, \"Sequence parallelism\")";
      EXPECT_EQ(got.forward_sent, ring)
          << who << ": bytes sent in forward, expected the ring all-reduce's 2(k - 1)/k";
      std::vector<std::string> pair, grads;
      for (const std::string& s : got.backward_comm)
        (s.rfind("all_reduce ", 0) == 0 ? grads : pair).push_back(s);
      EXPECT_EQ(pair, fwd_want) << who << ": the backward's large collectives were " << joined(pair)
                                << ", expected " << joined(fwd_want)
                                << " (revisit: which collective is the backward of each of the "
                                << "forward's two?)";
      const std::vector<std::string> grads_want = {grad, grad, grad};
      EXPECT_EQ(grads, grads_want)
          << who << ": the backward's all-reduces were " << joined(grads) << ", expected "
          << joined(grads_want) << " (ln.weight, ln.bias, fc2.bias: summed over the ranks' "
          << "positions, any order; nothing of [B*T, D] is all-reduced)";
      EXPECT_EQ(got.gathers.calls, 2) << who << ": all_gather calls in the counters";
      EXPECT_EQ(got.scatters.calls, 2) << who << ": reduce_scatter calls in the counters";
      EXPECT_EQ(got.gathers.bytes_sent + got.scatters.bytes_sent, 2 * ring)
          << who << ": bytes the pair sent over forward and backward, from the counters";
      out.record(got.forward_comm == fwd_want && pair == fwd_want && grads == grads_want);
      out.record(got.forward_sent);
      out.record(got.gathers.bytes_sent + got.scatters.bytes_sent);
    }
  }
}

// What a rank still holds after forward, x_r (allocated in the rank, first) included. The
// LayerNorm/residual region (x_r, the LayerNorm's mean and rstd, y_r) is exactly 1/k of what
// every rank holds there without sequence parallelism, 2 B T D + 2 B T floats; the column/row
// region (fc1's gathered input B T D, fc1's and GELU's outputs 4 B T D / k each) is step 1's.
TEST(SequenceParallel, ActivationMemoryOfTheLayerNormAndResidualFallsByK) {
  const std::string test = "SequenceParallel.ActivationMemoryOfTheLayerNormAndResidualFallsByK";
  const Case c = lab08_cases::seeded_sp_case(test);
  const lab08_cases::SpCase m = lab08_cases::make_sp_case(c);
  gtl::judge::Outputs out(test);
  const int64_t n = c.rows(), d = kSpDim;
  for (int k : lab08_cases::kSpTpSizes) {
    const std::vector<SpRank> ranks = run_sp(m, k);
    const int64_t ln_region = 4 * (2 * n * d + 2 * n) / k;
    const int64_t tp_region = 4 * (n * d + 2 * n * lab08_cases::kSpHidden / k);
    for (int r = 0; r < k; ++r) {
      const SpRank& got = ranks[std::size_t(r)];
      out.record(got.retained);
      EXPECT_EQ(got.retained, ln_region + tp_region)
          << "TP = " << k << ", rank " << r << ", " << c.str() << ": after forward the rank holds "
          << got.retained << " bytes, expected " << ln_region + tp_region
          << ": the LayerNorm/residual region " << ln_region << " (x_r, y_r [B, T/k, D], mean and "
          << "rstd [B*T/k]: 1/" << k << " of the " << 4 * (2 * n * d + 2 * n)
          << " every rank holds without sequence parallelism) plus the column/row region "
          << tp_region << " (fc1's gathered input [B*T, D], fc1's and GELU's outputs "
          << "[B*T, 4D/k]). Revisit what forward saves: the header lists it, nothing more";
    }
  }
}

}  // namespace
