// The 2-stage pipeline of lab 07 as a program, one process per stage (pristine: it runs your
// executor, TODO 5, on the tests' mpi_schedule: both neighbours sending at once):
//
//   mpirun -np 2 build/.../lab07_pipeline_train --out result      # 2 CPU processes, MPI
//   lab07_pipeline_train --out result                             # no launcher: see below
//
// Every rank writes its stage's loss and gradients to `<out>.rank<r>`. The same code as the
// in-process ranks: only where the communicator comes from changes. Without a launcher it is
// one in-process rank, and a one-stage pipeline is the whole model.
#include <cstring>
#include <exception>
#include <iostream>
#include <memory>
#include <string>

#include "gtl/distributed/launch.h"
#include "lab07_schedules.h"
#include "pipeline_training.h"

namespace lab07 {

int pipeline_main(int argc, char** argv) {
  std::string out = "lab07_result";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0) out = argv[i + 1];
  }
  std::unique_ptr<Communicator> comm = gtl::dist::init_from_environment();
  const int p = comm->world_size();
  PipelineConfig config = testing::mpi_config(p);
  const Schedule schedule = testing::mpi_schedule(p);
  const StageResult result = pipeline_step(*comm, config, schedule[comm->rank()]);
  write_stage_result(out + ".rank" + std::to_string(comm->rank()), result, comm->backend(), p);
  std::cout << "stage " << comm->rank() << "/" << p << " (" << comm->backend()
            << "): " << result.grads.size() << " gradients"
            << (comm->rank() == p - 1 ? ", loss " : "")
            << (comm->rank() == p - 1 ? std::to_string(result.loss) : "") << "\n";
  return 0;
}

}  // namespace lab07

int main(int argc, char** argv) {
  try {
    return lab07::pipeline_main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "lab07_pipeline_train: " << e.what() << "\n";
    return 1;
  }
}
