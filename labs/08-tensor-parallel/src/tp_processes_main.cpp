// lab08_tp_processes (provided, pristine): TODO 1 or TODO 3 on the launcher's processes (see
// tests/tp_processes.h).
//
//   mpirun -np 2 lab08_tp_processes --part mlp|loss --seed S --out PREFIX
//
// mlp: every rank builds the seed's unsharded fc1 and fc2 and its input and output gradient
// (lab08_cases.h), wraps them in your ParallelMLP (TP = the world size), runs one forward and one
// backward, and writes its output, dx and parameter gradients. loss: every rank draws the seed's
// full logits and labels, keeps its vocabulary columns, runs your VocabParallelCrossEntropy's
// forward and backward (inside TODO 3's runtime guard scope), and writes the loss and its
// dlogits; then builds your VocabParallelEmbedding from another table (the seed's + 7919), writes
// the seed's table's rows into its shard (as VocabParallel.EmbeddingEquals* does), and writes its
// lookup of the seed's ids. Both in the core's deterministic mode with row-invariant GEMMs; rank r
// writes PREFIX.r.
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "gtl/distributed/launch.h"
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
  if (out.empty() || (part != "mlp" && part != "loss")) {
    std::cerr << "usage: lab08_tp_processes --part mlp|loss --seed S --out PREFIX\n";
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
