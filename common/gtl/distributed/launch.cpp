// Launch helpers: read the environment a launcher leaves behind and build the communicator.
#include "gtl/distributed/launch.h"

#include <algorithm>
#include <cstdlib>

#include "gtl/distributed/in_process.h"
#include "gtl/distributed/mpi_communicator.h"
#include "gtl/distributed/nccl_communicator.h"

namespace gtl::dist {

namespace {

int env_int(const char* name, int fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  GTL_CHECK(*end == '\0', name << ": expected an integer, got '" << s << "'");
  return static_cast<int>(v);
}

int local_rank(int rank) {
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}) {
    const int v = env_int(name, -1);
    if (v >= 0) return v;
  }
  return rank % std::max(1, cuda_device_count());
}

// GTL_DIST_BACKEND is set (and not empty): the backend was asked for, not picked.
bool backend_requested() {
  const char* s = std::getenv("GTL_DIST_BACKEND");
  return s && *s;
}

}  // namespace

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::InProcess:
      return "in-process";
    case Backend::Mpi:
      return "mpi";
    case Backend::Nccl:
      return "nccl";
  }
  return "?";
}

Backend parse_backend(const std::string& name) {
  if (name == "in-process" || name == "inprocess" || name == "threads") return Backend::InProcess;
  if (name == "mpi") return Backend::Mpi;
  if (name == "nccl") return Backend::Nccl;
  throw Error("GTL_DIST_BACKEND: expected in-process, mpi or nccl, got '" + name + "'");
}

Backend pick_backend() {
  if (backend_requested()) return parse_backend(std::getenv("GTL_DIST_BACKEND"));
  if (nccl_available()) return Backend::Nccl;
  if (launched_by_mpi() && mpi_available()) return Backend::Mpi;
  return Backend::InProcess;
}

std::unique_ptr<Communicator> init_from_environment() {
  const Backend backend = pick_backend();
  if (launched_by_mpi()) {
    GTL_CHECK(backend != Backend::InProcess,
              "init_from_environment: started by mpirun/srun but GTL_DIST_BACKEND=in-process");
    auto world = mpi_world();  // also initialises MPI, which nccl_from_mpi needs
    if (backend == Backend::Mpi) return world;
    return nccl_from_mpi(local_rank(world->rank()));
  }
  const int world_size = env_int("WORLD_SIZE", -1);
  if (world_size > 0) {
    const int rank = env_int("RANK", -1);
    GTL_CHECK(rank >= 0 && rank < world_size,
              "init_from_environment: WORLD_SIZE=" << world_size << " needs RANK in [0, "
                                                   << world_size << "), got " << rank);
    GTL_CHECK(backend == Backend::Nccl,
              "init_from_environment: RANK/WORLD_SIZE bootstrap is for NCCL (GPUs); for CPU "
              "processes start the job with mpirun or srun");
    const char* path = std::getenv("GTL_DIST_RENDEZVOUS");
    GTL_CHECK(path && *path,
              "init_from_environment: set GTL_DIST_RENDEZVOUS to a fresh file path "
              "on a filesystem every rank can see");
    return nccl_from_file(rank, world_size, local_rank(rank), path);
  }
  GTL_CHECK(backend == Backend::InProcess || backend == Backend::Nccl,
            "init_from_environment: GTL_DIST_BACKEND=mpi, but this process was not started by "
            "mpirun or srun");
  // No launcher: a world of one rank, in-process, whatever hardware is visible. A world of one
  // sends nothing, and a program that trains on the CPU must not be handed an NCCL communicator
  // because the machine happens to have a GPU. Only an explicit GTL_DIST_BACKEND=nccl asks for a
  // one-rank NCCL world (a GPU program's single-process run).
  if (backend == Backend::Nccl && backend_requested()) return std::move(nccl_communicators({0})[0]);
  return std::move(make_in_process_world(1)[0]);
}

}  // namespace gtl::dist
