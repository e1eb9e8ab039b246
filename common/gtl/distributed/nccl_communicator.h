// NCCL backend: one rank per GPU, CUDA tensors, collectives ordered on current_stream().
//
// Three ways to create the ranks:
//   nccl_communicators({0, 1, 2, 3})   one process driving several GPUs (ncclCommInitAll);
//                                      run_nccl_ranks() gives each its own thread
//   nccl_from_mpi(device)              one process per GPU, started by mpirun / srun: rank 0's
//                                      ncclUniqueId reaches the others by MPI_Bcast
//   nccl_from_file(rank, n, device, path)  one process per GPU, torchrun style: rank 0 writes
//                                      the id to a file on a shared filesystem, others poll it
// The two one-process-per-GPU forms make `device` the process's current GPU for good
// (cudaSetDevice, as torch.cuda.set_device), so the default stream, device_synchronize() and
// anything else that means "the current GPU" are the rank's own GPU afterwards. Tensors still
// name their GPU explicitly: create them on Device::cuda(device), not on default_device().
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/distributed/in_process.h"

namespace gtl::dist {

// True when this build has NCCL and a GPU is visible.
bool nccl_available();

std::vector<std::unique_ptr<Communicator>> nccl_communicators(const std::vector<int>& devices);
std::unique_ptr<Communicator> nccl_from_mpi(int device);
// `path` must be fresh for each job (a stale file from an earlier run holds a stale id).
std::unique_ptr<Communicator> nccl_from_file(int rank, int world_size, int device,
                                             const std::string& path,
                                             std::chrono::milliseconds timeout = default_timeout());

// One thread per GPU 0..world_size-1, each in its own stream; like run_ranks. A failing rank
// aborts every communicator (ncclCommAbort) so the others fail instead of hanging; a rank whose
// NCCL work does not finish within timeout() (barrier(), and the end of the rank's work) fails
// with DistError, as does one whose communicator NCCL reports an asynchronous error for.
void run_nccl_ranks(int world_size, const std::function<void(Communicator&)>& fn);

}  // namespace gtl::dist
