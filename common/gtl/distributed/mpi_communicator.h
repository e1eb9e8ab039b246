// MPI backend: one rank per process, on one node or many (mpirun -np N, srun). CPU tensors.
//
// The collectives are the ring algorithms of ring.h run over MPI point-to-point messages
// (MPI_Isend / MPI_Irecv), not MPI_Allreduce: the counters then report the ring's exact
// traffic, identical to the in-process backend, and every wait has a timeout.
#pragma once

#include <memory>

#include "gtl/distributed/communicator.h"

namespace gtl::dist {

// True when this build has the MPI backend (OpenMPI found at configure time).
bool mpi_available();
// True when this process was started by mpirun/mpiexec or srun (OMPI_COMM_WORLD_SIZE,
// PMI_SIZE or PMIX_RANK in the environment).
bool launched_by_mpi();
// The communicator of MPI_COMM_WORLD (a duplicate of it). Initialises MPI on first use and
// finalises it at exit. Throws gtl::Error in a build without MPI.
std::unique_ptr<Communicator> mpi_world();

}  // namespace gtl::dist
