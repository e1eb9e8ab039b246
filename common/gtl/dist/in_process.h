// In-process ranks: N threads of one process, each one rank. No MPI, no GPU needed: the
// distributed labs run on a laptop and in CI, with the same code that later runs on GPUs.
//
//   gtl::dist::run_ranks(4, [](gtl::dist::Communicator& comm) {
//     Tensor g = ...;              // this rank's gradients
//     comm.all_reduce(g, ReduceOp::Avg);
//   });
//
// Each rank's thread gets its own CPU allocator (so memory statistics are per rank) and, when a
// GPU is present, its own stream and (once the caching allocator exists) its own GPU allocator:
// ranks sharing one GPU behave like separate processes on it.
#pragma once

#include <chrono>
#include <functional>

#include "gtl/dist/communicator.h"

namespace gtl::dist {

struct RunOptions {
  // Timeout of every collective; tests use a few seconds so a hang fails fast.
  std::chrono::milliseconds timeout = default_timeout();
  // Simulated ranks sharing one GPU: the device whose per-rank stream each rank works in.
  Device device = Device::cpu();
};

// Runs fn(comm) on world_size threads, rank r getting the communicator of rank r, and returns
// when all have finished. If a rank throws, the others' collectives fail at once ("aborted
// because rank r failed") instead of hanging, and run_ranks rethrows the first failure as a
// DistError naming its rank.
void run_ranks(int world_size, const std::function<void(Communicator&)>& fn,
               const RunOptions& options = {});

// The communicators of an in-process world, for callers that manage their own threads.
std::vector<std::unique_ptr<Communicator>> make_in_process_world(int world_size);

}  // namespace gtl::dist
