// lab08_tp_processes (provided, pristine): TODO 1, 3, 4 or 5 on the launcher's processes (see
// tests/tp_processes.h).
//
//   mpirun -np 2 lab08_tp_processes --part mlp|loss|sp --seed S --out PREFIX
//   mpirun -np 4 lab08_tp_processes --part dp-tp --seed S --out PREFIX
//
// mlp: every rank builds the seed's unsharded fc1 and fc2 and its input and output gradient
// (lab08_cases.h), wraps them in your ParallelMLP (TP = the world size), runs one forward and one
// backward, and writes its output, dx and parameter gradients. loss: every rank draws the seed's
// full logits and labels, keeps its vocabulary columns, runs your VocabParallelCrossEntropy's
// forward and backward (inside TODO 3's runtime guard scope), and writes the loss and its
// dlogits; then builds your VocabParallelEmbedding from another table (the seed's + 7919), writes
// the seed's table's rows into its shard (as VocabParallel.EmbeddingEquals* does), and writes its
// lookup of the seed's ids. sp: every rank builds the seed's sequence-parallel case (as
// SequenceParallel.* do), writes your gather_sequence of its positions of the pair's sequence and
// your scatter_sequence of its own partial sum, then runs your SequenceParallelMLP (built by the
// lab's cut, src/sequence_parallel_mlp.cpp: no TODO 1 code) forward and backward on its positions
// and writes y_r, dx_r and the six gradients. dp-tp: the four ranks form the core's ProcessGrid
// (DP = 2 x TP = 2, built outside TODO 5's scope, so finalize_gradients never depends on
// make_dp_tp_groups); every rank puts its micro-batch's gradients (lab08_cases.h, local_gradients)
// into a SequenceParallelMLP's shards, runs your finalize_gradients on the grid's groups (inside
// TODO 5's scope) and writes the six gradients. All in the core's deterministic mode with
// row-invariant GEMMs; rank r writes PREFIX.r.
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "gtl/distributed/launch.h"
#include "gtl/distributed/process_grid.h"
#include "gtl/ops/math_mode.h"
#include "lab08_student_call.h"
#include "tensor_parallel.h"
#include "tp_processes.h"

int main(int argc, char** argv) {
  using namespace lab08_tp_processes;
  uint64_t seed = 0;
  std::string out, part = "mlp";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seed") seed = std::stoull(value);
    if (flag == "--out") out = value;
    if (flag == "--part") part = value;
  }
  if (out.empty() || (part != "mlp" && part != "loss" && part != "sp" && part != "dp-tp")) {
    std::cerr << "usage: lab08_tp_processes --part mlp|loss|sp|dp-tp --seed S --out PREFIX\n";
    return 2;
  }
  try {
    const std::unique_ptr<gtl::dist::Communicator> comm = gtl::dist::init_from_environment();
    GTL_CHECK(comm->backend() != "nccl", "lab08_tp_processes runs on the CPU (MPI)");
    comm->set_deterministic(true);
    gtl::ops::ScopedRowInvariant row_invariant(true);
    RankResult result;
    result.world_size = comm->world_size();
    gtl::nn::Context ctx;
    if (part == "mlp") {
      const lab08_cases::MlpCase m = lab08_cases::make_mlp_case(process_case(seed));
      lab08::ParallelMLP mlp(*m.fc1, *m.fc2, *comm);
      result.values.push_back(mlp.forward(m.x, ctx).to_vector());
      result.values.push_back(mlp.backward(ctx, m.dy).to_vector());
      for (const auto& p : mlp.parameters()) result.values.push_back(p.grad.to_vector());
    } else if (part == "sp") {
      const lab08_cases::Case c = sp_process_case(seed);
      const lab08_cases::SpCase m = lab08_cases::make_sp_case(c);
      const lab08::Slice mine =
          lab08::tp_slice(c.time, comm->rank(), comm->world_size(), "positions");
      const gtl::Tensor shard =
          lab08_cases::positions(lab08_cases::sp_whole(c), mine.begin, mine.end);
      result.values.push_back(lab08::gather_sequence(shard, *comm).to_vector());
      result.values.push_back(
          lab08::scatter_sequence(lab08_cases::sp_partial(c, comm->rank()), *comm).to_vector());
      lab08::SequenceParallelMLP mlp(*m.full, *comm);
      result.values.push_back(
          mlp.forward(lab08_cases::positions(m.x, mine.begin, mine.end), ctx).to_vector());
      result.values.push_back(
          mlp.backward(ctx, lab08_cases::positions(m.dy, mine.begin, mine.end)).to_vector());
      for (const auto& p : mlp.parameters()) result.values.push_back(p.grad.to_vector());
    } else if (part == "dp-tp") {
      const lab08_cases::Grid g = kDpTpGrid;
      GTL_CHECK(comm->world_size() == g.world(),
                "--part dp-tp runs on " << g.world() << " processes, got " << comm->world_size());
      const lab08_cases::Case c = dp_tp_process_case(seed);
      const lab08_cases::SpCase m = lab08_cases::make_dp_tp_case(c, g);
      const int w = comm->rank();
      const std::vector<gtl::Tensor> local =
          lab08_cases::local_gradients(m, c, g, w / g.tp, w % g.tp);
      const gtl::dist::ProcessGrid grid(*comm, g.tp, 1, g.dp);
      lab08::SequenceParallelMLP shard(*m.full, grid.tp_group());
      const std::vector<gtl::nn::ParamRef> params = shard.parameters();
      for (std::size_t i = 0; i < params.size(); ++i) gtl::Tensor(params[i].grad).copy_(local[i]);
      {
        const auto call = lab08_student_call::todo5();
        lab08::finalize_gradients(params, lab08_cases::kReplicated, grid.tp_group(),
                                  grid.dp_group());
      }
      for (const auto& p : params) result.values.push_back(p.grad.to_vector());
    } else {
      const auto [logits, labels] =
          lab08_cases::make_logits(process_case(seed), kLogitLow, kLogitHigh);
      const lab08::Slice cols =
          lab08::tp_slice(lab08_cases::kVocab, comm->rank(), comm->world_size(), "vocabulary");
      const gtl::Tensor local = lab08_cases::columns(logits, cols.begin, cols.end);
      const auto call = lab08_student_call::todo3();
      lab08::VocabParallelCrossEntropy loss(*comm);
      result.values.push_back(loss.forward(local, labels, ctx).to_vector());
      result.values.push_back(loss.backward(ctx, 1.f).to_vector());
      const lab08_cases::Case c = process_case(seed);
      const auto full = lab08_cases::make_embedding(c.seed);
      const auto built_from = lab08_cases::make_embedding(c.seed + lab08_cases::kOtherTable);
      lab08::VocabParallelEmbedding emb(*built_from, *comm);
      const lab08::Slice rows =
          lab08::tp_slice(lab08_cases::kVocab, comm->rank(), comm->world_size(), "vocabulary rows");
      gtl::Tensor(emb.parameters()[0].value)
          .copy_(full->weight().value.slice(rows.begin, rows.end));
      gtl::nn::Context ectx;
      result.values.push_back(emb.forward(lab08_cases::make_ids(c), ectx).to_vector());
    }
    write_result(out + "." + std::to_string(comm->rank()), result);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lab08_tp_processes: " << e.what() << "\n";
    return 1;
  }
}
