// lab05_broadcast_processes (provided, pristine): the student's broadcast_parameters (TODO 2) on
// the launcher's processes (see broadcast_processes.h).
//
//   mpirun -np 3 lab05_broadcast_processes --seed BASE --out PREFIX
//
// For every root in turn, each rank builds the lab model from the seed BASE + rank (other weights
// on every rank), calls broadcast_parameters from that root and records its flat weights and its
// communicator's counters. Rank r writes PREFIX.r.
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "broadcast_processes.h"
#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/launch.h"
#include "gtl/nn/models.h"

int main(int argc, char** argv) {
  uint64_t seed = 0;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seed") seed = std::stoull(value);
    if (flag == "--out") out = value;
  }
  if (out.empty()) {
    std::cerr << "usage: lab05_broadcast_processes --seed BASE --out PREFIX\n";
    return 2;
  }
  try {
    const std::unique_ptr<lab05::Communicator> comm = gtl::dist::init_from_environment();
    std::vector<lab05::BroadcastRun> runs;
    for (int root = 0; root < comm->world_size(); ++root) {
      gtl::nn::ModelConfig config = lab05::lab_model();
      config.seed = seed + static_cast<uint64_t>(comm->rank());  // other weights on every rank
      const auto model = gtl::nn::make_model(config);
      comm->reset_counters();
      lab05::broadcast_parameters(*comm, model->parameters(), root);
      lab05::BroadcastRun run;
      run.root = root;
      run.bytes_received = comm->total_counters().bytes_received;
      run.broadcast_bytes_received = comm->counters("broadcast").bytes_received;
      for (const auto& p : model->parameters()) {
        const std::vector<float> v = p.value.to_vector();
        run.values.insert(run.values.end(), v.begin(), v.end());
      }
      runs.push_back(run);
    }
    lab05::write_broadcast_runs(out + "." + std::to_string(comm->rank()), comm->world_size(), runs);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lab05_broadcast_processes: " << e.what() << "\n";
    return 1;
  }
}
