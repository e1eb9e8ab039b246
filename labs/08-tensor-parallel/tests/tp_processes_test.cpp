// TODOs 1, 3, 4 and 5 as real processes (TpProcesses.*): your ParallelMLP, your
// VocabParallelCrossEntropy and VocabParallelEmbedding, and your gather_sequence, scatter_sequence
// and SequenceParallelMLP on two processes under `mpirun -np 2`, and your finalize_gradients on
// four (DP = 2 x TP = 2, `mpirun -np 4`), all on the MPI backend, against the core's unsharded
// layers and cross-entropy computed here (tp_processes.h says why threads cannot show it). The
// test starts the program itself, so it runs under the grader like any other test; it is skipped,
// with the reason, in a build without OpenMPI. Each launch ends within kJobTimeoutS + 10 s
// (launched_job.h), all four within the program's CTest timeout (CMakeLists.txt). The MLP's
// tolerances as ParallelLinear.MlpEquals*: the output and dx within the bound of two summation
// orders (lab08_cases.h, contraction_bound), every rank's output the same bits as rank 0's, every
// weight and bias gradient its slice of the unsharded one bit for bit. TODOs 4 and 5 as their
// in-process checks at TP = 2 and DP = 2 x TP = 2 (lab08_references.h, the same references).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtl/nn/activation.h"
#include "gtl/ops/cross_entropy.h"
#include "gtl_judge_output.h"
#include "gtl_test_seed.h"
#include "lab08_cases.h"
#include "lab08_references.h"
#include "lab08_test_util.h"
#include "launched_job.h"
#include "tensor_parallel.h"
#include "tp_processes.h"

namespace {

using namespace lab08;
using namespace lab08::testing;
namespace tpp = lab08_tp_processes;

// Runs `--part part` on kWorld processes and reads every rank's file (each read and removed
// before any assertion can return); "" in `failure` when the job and every file were fine.
std::vector<tpp::RankResult> launch_part(const std::string& part, std::size_t tensors,
                                         uint64_t seed, std::string& failure,
                                         int world = tpp::kWorld) {
  const std::string prefix = "/tmp/lab08_tp_" + part + "_" + std::to_string(::getpid());
  const std::string command = gtl::testing::mpirun(LAB08_MPIEXEC, world) + " " +
                              LAB08_TP_PROCESSES + " --part " + part + " --seed " +
                              std::to_string(seed) + " --out " + prefix;
  const gtl::testing::Launched job = gtl::testing::launch(command);
  std::vector<tpp::RankResult> files(static_cast<std::size_t>(world));
  failure = job.status == 0 ? "" : gtl::testing::launch_failure(command, job);
  for (int r = 0; r < world; ++r) {
    const std::string path = prefix + "." + std::to_string(r);
    if (job.status == 0) {
      try {
        files[static_cast<std::size_t>(r)] = tpp::read_result(path, tensors);
        if (files[static_cast<std::size_t>(r)].world_size != world && failure.empty())
          failure = "rank " + std::to_string(r) + " saw world size " +
                    std::to_string(files[static_cast<std::size_t>(r)].world_size) + ", expected " +
                    std::to_string(world);
      } catch (const std::exception& e) {
        if (failure.empty()) failure = "rank " + std::to_string(r) + "'s result file: " + e.what();
      }
    }
    std::remove(path.c_str());
  }
  return files;
}

std::string why() {
  return " Processes share no memory: what a rank did not receive through the communicator "
         "cannot be in its result (" +
         gtl::test_seed::describe() + ")";
}

TEST(TpProcesses, TwoProcessesMatchTheUnshardedMlp) {
  if (std::string(LAB08_MPIEXEC).empty())
    GTEST_SKIP() << "this build has no MPI backend (OpenMPI not found)";
  const int world = tpp::kWorld;
  const uint64_t seed = gtl::test_seed::seed();
  std::string failure;
  const std::vector<tpp::RankResult> files = launch_part("mlp", tpp::kMlpTensors, seed, failure);
  ASSERT_EQ(failure, "");
  // The reference: the unsharded MLP in this process (row-invariant GEMMs, as the ranks ran).
  const lab08_cases::Case c = tpp::process_case(seed);
  const lab08_cases::MlpCase m = lab08_cases::make_mlp_case(c);
  gtl::ops::ScopedRowInvariant row_invariant(true);
  gtl::nn::GELU gelu;
  nn::Context c1, c2, c3;
  const Tensor h = gelu.forward(m.fc1->forward(m.x, c1), c2);
  const Tensor y = m.fc2->forward(h, c3);
  const Tensor dh = gelu.backward(c2, m.fc2->backward(c3, m.dy));
  const Tensor dx = m.fc1->backward(c1, dh);
  const auto p1 = m.fc1->parameters(), p2 = m.fc2->parameters();
  const auto y_bound = lab08_cases::contraction_bound(h, p2[0].value, p2[1].value);
  const auto dx_bound = lab08_cases::contraction_bound(dh, p1[0].value, Tensor(), true);
  const std::string why = ::why();
  gtl::judge::Outputs recorded("TpProcesses.TwoProcessesMatchTheUnshardedMlp");
  for (int r = 0; r < world; ++r) {
    const tpp::RankResult& got = files[static_cast<std::size_t>(r)];
    const std::string who =
        "rank " + std::to_string(r) + " of " + std::to_string(world) + " processes, " + c.str();
    for (const auto& v : got.values) recorded.record_all(v);
    const Slice hid = tp_slice(lab08_cases::kHidden, r, world, "hidden");
    EXPECT_EQ(bounded_problem(got.values[0], y.to_vector(), y_bound, "the MLP's output, " + who,
                              "the row-parallel layer: how its ranks' partial products become "
                              "one y on every rank, and where the bias belongs." +
                                  why),
              "");
    EXPECT_EQ(
        bitwise_problem(got.values[0], files[0].values[0], "the output of " + who + " vs rank 0",
                        "g: every rank must end with the same sum." + why),
        "");
    EXPECT_EQ(bounded_problem(got.values[1], dx.to_vector(), dx_bound, "the MLP's dx, " + who,
                              "the column-parallel layer's backward: each rank's dx holds only "
                              "its output features' part of the full dx, summed across ranks." +
                                  why),
              "");
    EXPECT_EQ(bitwise_problem(got.values[2], p1[0].grad.slice(hid.begin, hid.end).to_vector(),
                              "fc1's weight gradient, " + who,
                              "the column-parallel shard (rows of W) and its backward." + why),
              "");
    EXPECT_EQ(bitwise_problem(got.values[3], p1[1].grad.slice(hid.begin, hid.end).to_vector(),
                              "fc1's bias gradient, " + who,
                              "the column-parallel shard (rows of b)." + why),
              "");
    EXPECT_EQ(bitwise_problem(got.values[4],
                              lab08_cases::columns(p2[0].grad, hid.begin, hid.end).to_vector(),
                              "fc2's weight gradient, " + who,
                              "the row-parallel shard (columns of W) and its backward." + why),
              "");
    EXPECT_EQ(
        bitwise_problem(got.values[5], p2[1].grad.to_vector(), "fc2's bias gradient, " + who,
                        "the row-parallel bias: whole on every rank, from the whole dy." + why),
        "");
  }
}

// TODO 3 on two processes: each holds its vocabulary columns of the seed's logits; the loss and
// dlogits against the core's cross-entropy on the full logits, with VocabParallel.Loss*'s bounds
// (lab08_cases.h, loss_bound and dlogit_bound). Then each holds its rows of the seed's token table
// (its layer built from another table, as VocabParallel.EmbeddingEquals*): its lookup of the
// seed's ids against the core's TokenEmbedding, bit for bit.
TEST(TpProcesses, TwoProcessesMatchTheUnshardedCrossEntropy) {
  if (std::string(LAB08_MPIEXEC).empty())
    GTEST_SKIP() << "this build has no MPI backend (OpenMPI not found)";
  const int world = tpp::kWorld;
  const uint64_t seed = gtl::test_seed::seed();
  std::string failure;
  const std::vector<tpp::RankResult> files = launch_part("loss", tpp::kLossTensors, seed, failure);
  ASSERT_EQ(failure, "");
  const lab08_cases::Case c = tpp::process_case(seed);
  const auto [logits, labels] = lab08_cases::make_logits(c, tpp::kLogitLow, tpp::kLogitHigh);
  const double loss_ref = gtl::ops::cross_entropy(logits, labels).item();
  const Tensor d_ref = gtl::ops::cross_entropy_backward(logits, labels, 1.f);
  const double loss_bound = lab08_cases::loss_bound(loss_ref, c.rows());
  const auto table = lab08_cases::make_embedding(c.seed);
  nn::Context ectx;
  const std::vector<float> lookup = table->forward(lab08_cases::make_ids(c), ectx).to_vector();
  gtl::judge::Outputs recorded("TpProcesses.TwoProcessesMatchTheUnshardedCrossEntropy");
  for (int r = 0; r < world; ++r) {
    const tpp::RankResult& got = files[static_cast<std::size_t>(r)];
    const std::string who =
        "rank " + std::to_string(r) + " of " + std::to_string(world) + " processes, " + c.str();
    for (const auto& v : got.values) recorded.record_all(v);
    EXPECT_EQ(bounded_problem(got.values[0], {float(loss_ref)}, {loss_bound}, "the loss, " + who,
                              "each of the three per-row numbers every rank must share (the "
                              "row's max, the label's logit, the sum of exp over the whole row): "
                              "which reduction gives each, what each rank contributes." +
                                  why()),
              "");
    const Slice cols = tp_slice(lab08_cases::kVocab, r, world, "vocabulary");
    const std::vector<float> want = lab08_cases::columns(d_ref, cols.begin, cols.end).to_vector();
    std::vector<double> bound(want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      const int64_t row = int64_t(i) / cols.size(), col = cols.begin + int64_t(i) % cols.size();
      bound[i] = lab08_cases::dlogit_bound(want[i], labels.data<int64_t>()[row] == col, c.rows());
    }
    EXPECT_EQ(bounded_problem(got.values[1], want, bound, "dlogits, " + who,
                              "the backward: d loss / d logit on this rank's columns, from what "
                              "forward saved." +
                                  why()),
              "");
    EXPECT_EQ(bitwise_problem(got.values[2], lookup, "the embedding's output, " + who,
                              "the vocabulary-parallel lookup: every id's row lives in exactly "
                              "one rank's shard, and every rank needs it (the layer was built "
                              "from another table, then its shard got this table's rows)." +
                                  why()),
              "");
  }
}

// TODO 4 on two processes: each holds its positions tp_slice(T) of the seed's sequence-parallel
// case. 4a as SequenceParallel.Pair*: the gathered sequence and this rank's positions of the sum
// of the ranks' partial sums (in rank order), bit for bit. 4b as SequenceParallel.Mlp* at TP = 2
// (lab08_references.h, sp_bounds): y_r and dx_r within the bounds, fc1's and fc2's weight and
// bias shards bit for bit, the replicated gradients within their bounds and rank 0's bits.
TEST(TpProcesses, SequenceParallelOnTwoProcessesMatchesTheUnshardedLayer) {
  if (std::string(LAB08_MPIEXEC).empty())
    GTEST_SKIP() << "this build has no MPI backend (OpenMPI not found)";
  const int world = tpp::kWorld;
  const uint64_t seed = gtl::test_seed::seed();
  std::string failure;
  const std::vector<tpp::RankResult> files = launch_part("sp", tpp::kSpTensors, seed, failure);
  ASSERT_EQ(failure, "");
  const lab08_cases::Case c = tpp::sp_process_case(seed);
  const lab08_cases::SpCase m = lab08_cases::make_sp_case(c);
  const Tensor whole = lab08_cases::sp_whole(c);
  Tensor sum = lab08_cases::sp_partial(c, 0);
  for (int r = 1; r < world; ++r)
    gtl::dist::reduce_into(sum, lab08_cases::sp_partial(c, r), gtl::dist::ReduceOp::Sum);
  const lab08_references::Unsharded ref = lab08_references::run_unsharded(m);
  const lab08_references::SpBounds bound = lab08_references::sp_bounds(m, ref, world);
  const char* names[] = {"ln.weight", "ln.bias",    "fc1.weight",
                         "fc1.bias",  "fc2.weight", "fc2.bias"};
  gtl::judge::Outputs recorded(
      "TpProcesses.SequenceParallelOnTwoProcessesMatchesTheUnshardedLayer");
  for (int r = 0; r < world; ++r) {
    const tpp::RankResult& got = files[static_cast<std::size_t>(r)];
    const std::string who =
        "rank " + std::to_string(r) + " of " + std::to_string(world) + " processes, " + c.str();
    for (const auto& v : got.values) recorded.record_all(v);
    const Slice mine = tp_slice(c.time, r, world, "positions");
    const Slice hid = tp_slice(lab08_cases::kSpHidden, r, world, "hidden");
    EXPECT_EQ(bitwise_problem(got.values[0], whole.to_vector(), "gather_sequence, " + who,
                              "4a, the all-gather: every position of every sequence from the "
                              "rank that owns it." +
                                  why()),
              "");
    EXPECT_EQ(bitwise_problem(got.values[1],
                              lab08_cases::positions(sum, mine.begin, mine.end).to_vector(),
                              "scatter_sequence, " + who,
                              "4a, the reduce-scatter: this rank's positions of the SUM of every "
                              "rank's partial sum." +
                                  why()),
              "");
    EXPECT_EQ(bounded_problem(got.values[2], lab08_references::rank_rows(ref.y, c, mine),
                              lab08_references::rank_bounds(bound.y, c, mine),
                              "y at this rank's positions, " + who,
                              "4b's forward: fc1 needs every position, fc2's partial sums must "
                              "be added across the ranks." +
                                  why()),
              "");
    EXPECT_EQ(bounded_problem(got.values[3], lab08_references::rank_rows(ref.dx, c, mine),
                              lab08_references::rank_bounds(bound.dx, c, mine),
                              "dx at this rank's positions, " + who,
                              "4b's backward: the gradient of a gathered tensor goes back to the "
                              "ranks that owned its parts, summed." +
                                  why()),
              "");
    EXPECT_EQ(bitwise_problem(got.values[6], ref.grads[2].slice(hid.begin, hid.end).to_vector(),
                              "fc1's weight gradient, " + who,
                              "fc1's backward on the gathered (whole) LayerNorm output." + why()),
              "");
    EXPECT_EQ(bitwise_problem(got.values[7], ref.grads[3].slice(hid.begin, hid.end).to_vector(),
                              "fc1's bias gradient, " + who, "fc1's backward." + why()),
              "");
    EXPECT_EQ(bitwise_problem(got.values[8],
                              lab08_cases::columns(ref.grads[4], hid.begin, hid.end).to_vector(),
                              "fc2's weight gradient, " + who,
                              "fc2's backward on the gathered (whole) dy." + why()),
              "");
    const int replicated[] = {0, 1, 5};
    for (std::size_t q = 0; q < 3; ++q) {
      const auto p = std::size_t(replicated[q]);
      const std::string what = std::string(names[p]) + "'s gradient, " + who;
      const std::string hint =
          "the replicated parameters: this rank's backward sees only its positions, the "
          "gradient sums all B*T of them, the same on every rank." +
          why();
      EXPECT_EQ(bounded_problem(got.values[4 + p], ref.grads[p].to_vector(), bound.replicated[q],
                                what, hint),
                "");
      EXPECT_EQ(
          bitwise_problem(got.values[4 + p], files[0].values[4 + p], what + " vs rank 0", hint),
          "");
    }
  }
}

// TODO 5's finalize_gradients on four processes, DP = 2 x TP = 2 (the core's ProcessGrid's groups,
// so make_dp_tp_groups plays no part): every rank's six gradients after finalize_gradients against
// one process on the whole batch within DataTensorParallel.Gradients*'s bound (lab08_references.h,
// one_process_bounds), and the same bits as the ranks holding the same parameter (a shard's DP
// group, a replicated parameter's world).
TEST(TpProcesses, DataTensorParallelOnFourProcessesMatchesOneProcess) {
  if (std::string(LAB08_MPIEXEC).empty())
    GTEST_SKIP() << "this build has no MPI backend (OpenMPI not found)";
  const lab08_cases::Grid g = tpp::kDpTpGrid;
  const uint64_t seed = gtl::test_seed::seed();
  std::string failure;
  const std::vector<tpp::RankResult> files =
      launch_part("dp-tp", tpp::kDpTpTensors, seed, failure, g.world());
  ASSERT_EQ(failure, "");
  const lab08_cases::Case c = tpp::dp_tp_process_case(seed);
  gtl::ops::ScopedRowInvariant row_invariant(true);  // every row alone: the bound's premise
  const lab08_cases::SpCase m = lab08_cases::make_dp_tp_case(c, g);
  const std::vector<std::vector<double>> bounds = lab08_references::one_process_bounds(m, g);
  const std::vector<Tensor> one = lab08_references::one_process_gradients(m, g);
  const char* names[] = {"ln.weight", "ln.bias",    "fc1.weight",
                         "fc1.bias",  "fc2.weight", "fc2.bias"};
  gtl::judge::Outputs recorded("TpProcesses.DataTensorParallelOnFourProcessesMatchesOneProcess");
  for (int w = 0; w < g.world(); ++w) {
    const int r = w % g.tp;
    const tpp::RankResult& got = files[std::size_t(w)];
    const std::string who = g.str() + " processes, world rank " + std::to_string(w) + " (dp_rank " +
                            std::to_string(w / g.tp) + ", tp_rank " + std::to_string(r) + "), " +
                            lab08_cases::dp_tp_case_str(c);
    for (int p = 0; p < 6; ++p) {
      const auto i = std::size_t(p);
      recorded.record_all(got.values[i]);
      const bool rep = lab08_cases::kReplicated[i];
      const std::string hint =
          (rep ? std::string("TODO 5: a replicated parameter's gradient in terms of what its TP "
                             "group and its DP group hold")
               : std::string("TODO 5: a shard's gradient in terms of what its DP group holds, and "
                             "which group holds copies of the same shard")) +
          why();
      EXPECT_EQ(bounded_problem(got.values[i], lab08_cases::shard_of(one[i], p, g, r).to_vector(),
                                lab08_cases::bound_of(bounds[i], p, g, r),
                                std::string(names[p]) +
                                    "'s gradient against one process on the "
                                    "whole batch, " +
                                    who,
                                hint),
                "");
      const int same = rep ? 0 : r;
      EXPECT_EQ(
          bitwise_problem(got.values[i], files[std::size_t(same)].values[i],
                          std::string(names[p]) + "'s gradient against world rank " +
                              std::to_string(same) + "'s, " + who,
                          "TODO 5: the ranks holding one parameter must end with one gradient, "
                          "or their weights drift apart." +
                              why()),
          "");
    }
  }
}

}  // namespace
