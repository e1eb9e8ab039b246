// lab08_tp_processes (provided, pristine): TODO 1 on the launcher's processes (see
// tests/tp_processes.h).
//
//   mpirun -np 2 lab08_tp_processes --seed S --out PREFIX
//
// Every rank builds the seed's unsharded fc1 and fc2 and its input and output gradient
// (lab08_cases.h), wraps them in your ParallelMLP (TP = the world size), runs one forward and one
// backward in the core's deterministic mode with row-invariant GEMMs, and writes its output, dx
// and parameter gradients to PREFIX.r (r its rank).
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "gtl/distributed/launch.h"
#include "gtl/ops/math_mode.h"
#include "tensor_parallel.h"
#include "tp_processes.h"

int main(int argc, char** argv) {
  using namespace lab08_tp_processes;
  uint64_t seed = 0;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seed") seed = std::stoull(value);
    if (flag == "--out") out = value;
  }
  if (out.empty()) {
    std::cerr << "usage: lab08_tp_processes --seed S --out PREFIX\n";
    return 2;
  }
  try {
    const std::unique_ptr<gtl::dist::Communicator> comm = gtl::dist::init_from_environment();
    GTL_CHECK(comm->backend() != "nccl", "lab08_tp_processes runs on the CPU (MPI)");
    comm->set_deterministic(true);
    gtl::ops::ScopedRowInvariant row_invariant(true);
    const lab08_cases::MlpCase m = lab08_cases::make_mlp_case(process_case(seed));
    lab08::ParallelMLP mlp(*m.fc1, *m.fc2, *comm);
    RankResult result;
    result.world_size = comm->world_size();
    gtl::nn::Context ctx;
    result.values.push_back(mlp.forward(m.x, ctx).to_vector());
    result.values.push_back(mlp.backward(ctx, m.dy).to_vector());
    for (const auto& p : mlp.parameters()) result.values.push_back(p.grad.to_vector());
    write_result(out + "." + std::to_string(comm->rank()), result);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lab08_tp_processes: " << e.what() << "\n";
    return 1;
  }
}
