// Starting ranks: which backend, and how a process learns its rank.
//
//   run_ranks(n, fn)              n ranks as threads of this process (in_process.h)
//   init_from_environment()       this process is one rank of a job started by
//                                 mpirun -np N / srun (MPI) or by a launcher that sets
//                                 RANK, WORLD_SIZE (and LOCAL_RANK) like torchrun
//
// The backend is picked from what exists (pick_backend), unless GTL_DIST_BACKEND says
// in-process, mpi or nccl. See docs/distributed.md for complete launch commands.
#pragma once

#include <memory>
#include <string>

#include "gtl/distributed/communicator.h"

namespace gtl::dist {

enum class Backend { InProcess, Mpi, Nccl };
const char* backend_name(Backend b);  // "in-process", "mpi", "nccl"
Backend parse_backend(const std::string& name);

// GTL_DIST_BACKEND if set; else NCCL when this build has NCCL and a GPU is visible; else MPI
// when the process was started by mpirun/srun; else in-process.
Backend pick_backend();

// This process's communicator:
//   started by mpirun/srun: MPI world (CPU tensors), or NCCL on GPU LOCAL_RANK (or
//     OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID) with the id sent over MPI, per pick_backend();
//   RANK and WORLD_SIZE set: NCCL, the id exchanged through the file GTL_DIST_RENDEZVOUS;
//   neither: a world of one in-process rank, so single-process runs need no launcher, even on
//     a machine with a GPU (GTL_DIST_BACKEND=nccl asks for a one-rank NCCL world instead).
std::unique_ptr<Communicator> init_from_environment();

}  // namespace gtl::dist
