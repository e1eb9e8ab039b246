// Lab 05, TODO 7: the DDP run as real processes. The program lab05_ddp_train:
//
//   mpirun -np 2 build/.../lab05_ddp_train --out result.txt        # 2 CPU processes, MPI
//   srun --ntasks=8 --gpus-per-task=1 lab05_ddp_train --out r.txt  # a cluster (NCCL on GPUs)
//   lab05_ddp_train --out r.txt                                    # one process, no launcher
//
// The same training code as the in-process ranks: only where the communicator comes from changes.
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/launch.h"

namespace lab05 {

int ddp_main(int argc, char** argv) {
  std::string out = "lab05_result.txt";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0) out = argv[i + 1];
  }
  // SOLUTION(lab05) step 7: the lab's training run (the default TrainConfig) as this process's
  // rank.
  std::unique_ptr<Communicator> comm = gtl::dist::init_from_environment();
  if (comm->backend() != "nccl") comm->set_deterministic(true);  // NCCL cannot promise it
  TrainConfig config;
  if (comm->backend() == "nccl") {  // this rank's own GPU, numbered by the launcher per node
    int local = 0;
    for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
      if (const char* v = std::getenv(name)) {
        local = std::atoi(v);
        break;
      }
    }
    config.device = gtl::Device::cuda(local);
  }  // MPI, in-process: the CPU (TrainConfig's default)
  const TrainResult result = train_lab_model(*comm, config, core_flat_sync());
  if (comm->rank() == 0) write_result(out, result, comm->backend(), comm->world_size());
  std::cout << "rank " << comm->rank() << "/" << comm->world_size() << " (" << comm->backend()
            << "): final loss " << result.losses.back() << "\n";
  return 0;
  // END SOLUTION(lab05)
}

}  // namespace lab05

int main(int argc, char** argv) {
  try {
    return lab05::ddp_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "lab05_ddp_train: " << e.what() << "\n";
    return 1;
  }
}
