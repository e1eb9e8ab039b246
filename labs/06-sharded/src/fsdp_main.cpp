// The program lab06_fsdp_train (provided): the lab's training as real processes, with the ZeRO
// stage --stage picks: 3 (the default) your Fsdp with prefetch 1, 2 your Zero2, 1 your Zero1.
//
//   mpirun -np 2 build/.../lab06_fsdp_train --out result.txt        # 2 CPU processes, MPI
//   mpirun -np 2 build/.../lab06_fsdp_train --stage 1 --out r.txt   # the same with your Zero1
//   lab06_fsdp_train --out result.txt                               # one process, no launcher
//
// --stage bf16 trains nothing: each rank builds the lab model's units (their shards only) and
// gathers each unit's bf16 compute copy with your gather_bf16_values (TODO 8); rank 0 writes the
// copies, widened to fp32, as its weights (no losses).
//
// The same training code as the in-process ranks: only where the communicator comes from
// changes. The MPI backend runs the same ring algorithms with the same deterministic sums, so the
// result is bit for bit the in-process run's.
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "gtl/distributed/launch.h"
#include "lab06_student_call.h"
#include "sharded_training.h"

namespace {

constexpr const char* kUsage =
    "usage: lab06_fsdp_train [--stage 1|2|3|bf16] [--out FILE]\n"
    "  The lab's training on the ranks the launcher started: one process without a launcher, or\n"
    "  GTL_DIST_BACKEND=mpi mpirun -np N lab06_fsdp_train. --stage 3 (default): ZeRO-3 with\n"
    "  prefetch 1 (your Fsdp); 2: your Zero2; 1: your Zero1; bf16: no training, every unit's\n"
    "  bf16 compute copy gathered (your gather_bf16_values), written as the weights.\n"
    "  Rank 0 writes its weights and losses to FILE (default lab06_result.txt).\n";

// Every unit's bf16 compute copy (your gather_bf16_values), widened to fp32, in unit order.
std::vector<float> gathered_bf16_copies(lab06::Communicator& comm) {
  auto model = gtl::nn::make_model(lab06::lab_model());
  const std::vector<lab06::Unit> units =
      lab06::make_units(*model, comm, gtl::Device::cpu(), lab06::UnitBuffers::ShardsOnly);
  std::vector<float> out;
  for (const lab06::Unit& u : units) {
    gtl::Tensor copy;
    {
      const auto call = lab06_student_call::todo8();
      copy = lab06::gather_bf16_values(comm, *u.flat);
    }
    const std::vector<float> widened = copy.to(gtl::DType::Float32).to_vector();
    out.insert(out.end(), widened.begin(), widened.end());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string out = "lab06_result.txt";
    lab06::Stage stage = lab06::Stage::Zero3;
    bool bf16 = false;
    for (int i = 1; i < argc; ++i) {
      if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
        std::cout << kUsage;
        return 0;
      }
      if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
        out = argv[++i];
      } else if (std::strcmp(argv[i], "--stage") == 0 && i + 1 < argc) {
        const std::string s = argv[++i];
        bf16 = s == "bf16";
        if (s == "1" || s == "2" || s == "3" || bf16) {
          stage = s == "1"   ? lab06::Stage::Zero1
                  : s == "2" ? lab06::Stage::Zero2
                             : lab06::Stage::Zero3;
        } else {
          std::cerr << "lab06_fsdp_train: --stage takes 1, 2, 3 or bf16, not '" << s << "'\n"
                    << kUsage;
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
    if (bf16) {
      lab06::TrainResult copies;
      copies.weights = gathered_bf16_copies(*comm);
      if (comm->rank() == 0) lab06::write_result(out, copies, comm->backend(), comm->world_size());
      std::cout << "rank " << comm->rank() << "/" << comm->world_size() << " (" << comm->backend()
                << "): gathered " << copies.weights.size() << " bf16 values\n";
      return 0;
    }
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
