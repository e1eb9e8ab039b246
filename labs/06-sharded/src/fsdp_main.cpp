// The program lab06_fsdp_train (provided): the lab's ZeRO-3 training with prefetch 1 as real
// processes, your Fsdp inside.
//
//   mpirun -np 2 build/.../lab06_fsdp_train --out result.txt        # 2 CPU processes, MPI
//   lab06_fsdp_train --out result.txt                               # one process, no launcher
//
// The same training code as the in-process ranks: only where the communicator comes from
// changes. The MPI backend runs the same ring algorithms with the same deterministic sums, so the
// result is bit for bit the in-process run's.
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "gtl/distributed/launch.h"
#include "sharded_training.h"

namespace {

constexpr const char* kUsage =
    "usage: lab06_fsdp_train [--out FILE]\n"
    "  The lab's ZeRO-3 training with prefetch 1 (your Fsdp) on the ranks the launcher started:\n"
    "  one process without a launcher, or GTL_DIST_BACKEND=mpi mpirun -np N lab06_fsdp_train.\n"
    "  Rank 0 writes its weights and losses to FILE (default lab06_result.txt).\n";

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string out = "lab06_result.txt";
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
        std::cout << kUsage;
        return 0;
      }
      if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
        out = argv[++i];
      } else {
        std::cerr << "lab06_fsdp_train: unknown argument '" << argv[i] << "'\n" << kUsage;
        return 2;
      }
    }
    std::unique_ptr<lab06::Communicator> comm = gtl::dist::init_from_environment();
    GTL_CHECK(comm->backend() != "nccl", "lab06_fsdp_train runs on the CPU (MPI or one process)");
    comm->set_deterministic(true);
    lab06::TrainConfig config;
    config.prefetch = 1;
    const lab06::TrainResult result = lab06::train(*comm, lab06::Stage::Zero3, config);
    if (comm->rank() == 0) lab06::write_result(out, result, comm->backend(), comm->world_size());
    std::cout << "rank " << comm->rank() << "/" << comm->world_size() << " (" << comm->backend()
              << "): final loss " << result.losses.back() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lab06_fsdp_train: " << e.what() << "\n";
    return 1;
  }
}
