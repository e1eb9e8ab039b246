// In-process ranks: N threads of one process, each one rank. No MPI, no GPU needed: the
// distributed labs run on a laptop and in CI, with the same code that later runs on GPUs.
//
//   gtl::dist::run_ranks(4, [](gtl::dist::Communicator& comm) {
//     Tensor g = ...;              // this rank's gradients
//     comm.all_reduce(g, ReduceOp::Avg);
//   });
//
// Each rank's thread gets its own CPU allocator (so memory statistics are per rank; pass your own
// in RunOptions::allocators to read them after the run) and, when a GPU is present, its own
// stream and (once the caching allocator exists) its own GPU allocator: ranks sharing one GPU
// behave like separate processes on it.
//
// Sends are rendezvous by default, as on NCCL: a send completes when its receiver has taken the
// data, so a program that would deadlock on GPUs deadlocks here too, and the timeout says which
// rank waits for which (see in_process.cpp). Async operations on CPU tensors run on one progress
// thread per communicator, in issue order.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "gtl/distributed/communicator.h"
#include "gtl/memory/allocator.h"

namespace gtl::dist {

struct RunOptions {
  // Timeout of every collective; tests use a few seconds so a hang fails fast.
  std::chrono::milliseconds timeout = default_timeout();
  // Simulated ranks sharing one GPU: the device whose per-rank stream each rank works in.
  Device device = Device::cpu();
  // Rendezvous sends (as NCCL): a send completes when the receiver has taken the data, which
  // it copies straight from the sender's tensor. false: buffered sends (a copy in the sender's
  // memory, handed over through a mailbox), for callers that need a send to return at once.
  bool rendezvous = true;
  // Communicator::set_deterministic on every rank: sums in rank order, whatever the chunking.
  bool deterministic = false;
  // CPU memory limit of every rank in bytes (0: none): an allocation beyond it throws
  // OutOfMemoryError in that rank.
  int64_t memory_limit = 0;
  // If not empty, rank r's CPU allocator (one per rank): its statistics stay readable after the
  // run. Otherwise each rank gets a fresh CPU allocator.
  std::vector<std::shared_ptr<Allocator>> allocators;
};

// Runs fn(comm) on world_size threads, rank r getting the communicator of rank r, and returns
// when all have finished. If a rank throws, the others' collectives fail at once ("aborted
// because rank r failed") instead of hanging, and run_ranks rethrows the first failure as a
// DistError naming its rank.
void run_ranks(int world_size, const std::function<void(Communicator&)>& fn,
               const RunOptions& options = {});

// The communicators of an in-process world, for callers that manage their own threads.
// Options used: timeout, rendezvous, deterministic.
std::vector<std::unique_ptr<Communicator>> make_in_process_world(int world_size,
                                                                 const RunOptions& options = {});

}  // namespace gtl::dist
