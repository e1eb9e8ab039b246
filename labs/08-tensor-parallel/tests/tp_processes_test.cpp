// TODOs 1 and 3 as real processes (TpProcesses.*): your ParallelMLP, and your
// VocabParallelCrossEntropy and VocabParallelEmbedding, on two processes under `mpirun -np 2` (the
// MPI backend), against the core's unsharded fc1 -> GELU -> fc2 and cross-entropy computed here
// (tp_processes.h says why threads cannot show it). The test starts the program itself, so it runs
// under the grader like any other test; it is skipped, with the reason, in a build without OpenMPI.
// The launch ends within kJobTimeoutS + 10 s (launched_job.h), within the program's CTest timeout
// (CMakeLists.txt). The MLP's tolerances as ParallelLinear.MlpEquals*: the output and dx within the
// bound of two summation orders (lab08_cases.h, contraction_bound), every rank's output the same
// bits as rank 0's, every weight and bias gradient its slice of the unsharded one bit for bit.
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
                                         uint64_t seed, std::string& failure) {
  const int world = tpp::kWorld;
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

}  // namespace
