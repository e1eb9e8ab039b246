// The program lab06_fsdp_train (provided): the lab's training as real processes, with the ZeRO
// stage --stage picks: 3 (the default) your Fsdp with prefetch 1, 2 your Zero2, 1 your Zero1.
//
//   mpirun -np 2 build/.../lab06_fsdp_train --out result.txt        # 2 CPU processes, MPI
//   mpirun -np 2 build/.../lab06_fsdp_train --stage 1 --out r.txt   # the same with your Zero1
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
    "usage: lab06_fsdp_train [--stage 1|2|3] [--out FILE]\n"
    "  The lab's training on the ranks the launcher started: one process without a launcher, or\n"
    "  GTL_DIST_BACKEND=mpi mpirun -np N lab06_fsdp_train. --stage 3 (default): ZeRO-3 with\n"
    "  prefetch 1 (your Fsdp); 2: your Zero2; 1: your Zero1.\n"
    "  Rank 0 writes its weights and losses to FILE (default lab06_result.txt).\n";

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string out = "lab06_result.txt";
    lab06::Stage stage = lab06::Stage::Zero3;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
        std::cout << kUsage;
        return 0;
      }
      if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
        out = argv[++i];
      } else if (std::strcmp(argv[i], "--stage") == 0 && i + 1 < argc) {
        const std::string s = argv[++i];
        if (s == "1" || s == "2" || s == "3") {
          stage = s == "1"   ? lab06::Stage::Zero1
                  : s == "2" ? lab06::Stage::Zero2
                             : lab06::Stage::Zero3;
        } else {
          std::cerr << "lab06_fsdp_train: --stage takes 1, 2 or 3, not '" << s << "'\n" << kUsage;
          return 2;
        }
      } else {
        std::cerr << "lab06_fsdp_train: unknown argument '" << argv[i] << "'\n" << kUsage;
        return 2;
      }
    }
    std::unique_ptr<lab06::Communicator> comm = gtl::dist::init_from_environment();
    GTL_CHECK(comm->backend() != "nccl", "lab06_fsdp_train runs on the CPU (MPI or one process)");
    comm->set_deterministic(true);
    lab06::TrainConfig config;
    if (stage == lab06::Stage::Zero3) config.prefetch = 1;
    const lab06::TrainResult result = lab06::train(*comm, stage, config);
    if (comm->rank() == 0) lab06::write_result(out, result, comm->backend(), comm->world_size());
    std::cout << "rank " << comm->rank() << "/" << comm->world_size() << " (" << comm->backend()
              << ", " << lab06::stage_name(stage) << "): final loss " << result.losses.back()
              << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "lab06_fsdp_train: " << e.what() << "\n";
    return 1;
  }
}
