// Memory of the ranks: RunOptions::memory_limit gives every rank's allocator a limit (an
// allocation beyond it throws OutOfMemoryError in that rank), RunOptions::allocators lets a
// test read each rank's statistics after the run, and the transient bytes of the collectives
// are exactly what docs/distributed.md states: none in rendezvous mode, one chunk for a
// deterministic all-reduce on ranks other than 0, the sent messages in buffered mode (charged
// to the sender, also when the operation runs on the progress thread).
#include "dist_test_util.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

std::vector<std::shared_ptr<Allocator>> cpu_allocators(int n) {
  std::vector<std::shared_ptr<Allocator>> a;
  for (int r = 0; r < n; ++r) a.push_back(make_cpu_allocator());
  return a;
}

TEST(DistMemory, MemoryLimitPerRankThrowsOutOfMemoryInThatRank) {
  RunOptions options = testing::fast_options();
  options.memory_limit = 64 * 1024;
  run_ranks(
      2,
      [](Communicator& comm) {
        EXPECT_EQ(current_allocator(Device::cpu())->memory_limit(), 64 * 1024)
            << "every rank's allocator must get RunOptions::memory_limit";
        Tensor small = Tensor::zeros({1024});  // 4 KiB: fits
        if (comm.rank() == 1) {
          EXPECT_THROW(Tensor::zeros({64 * 1024}), OutOfMemoryError)
              << "256 KiB on a rank limited to 64 KiB must throw OutOfMemoryError";
        }
        comm.all_reduce(small);  // the other rank is unaffected
      },
      options);
}

TEST(DistMemory, RendezvousCollectivesAllocateNothingAndStatsOutliveTheRun) {
  constexpr int N = 3;
  constexpr int64_t m = 100;  // elements per chunk
  RunOptions options = testing::fast_options();
  options.allocators = cpu_allocators(N);
  run_ranks(
      N,
      [](Communicator& comm) {
        const int r = comm.rank();
        Tensor own = Tensor::zeros({256 * (r + 1)});  // a different footprint per rank
        Tensor buffer = testing::input(r, m * N, DType::Float32), shard = Tensor::zeros({m});
        Tensor gathered = Tensor::zeros({m * N}), message = Tensor::zeros({m});
        comm.all_reduce(buffer);
        comm.reduce_scatter(buffer, shard);
        comm.all_gather(shard, gathered);
        comm.broadcast(buffer, 1);
        comm.send_recv(shard, (r + 1) % N, message, (r + N - 1) % N);
      },
      options);
  for (int r = 0; r < N; ++r) {
    const MemoryStats s = options.allocators[r]->stats();
    const int64_t tensors = 4 * (256 * (r + 1) + m * N + m + m * N + m);
    EXPECT_EQ(s.peak_allocated_bytes, tensors)
        << "rank " << r << ": in rendezvous mode all_reduce, reduce_scatter, all_gather, "
        << "broadcast and send_recv must allocate nothing beyond the rank's own tensors";
    EXPECT_EQ(s.allocated_bytes, 0) << "rank " << r << ": everything is freed after the run";
  }
}

// A pipeline stage sends an activation, drops it and allocates the next: its peak is exact only
// if the receiver holds no reference to the sent tensor once the send has completed. Otherwise
// the bytes are freed whenever the receiving thread gets round to it, and the sender's peak
// depends on thread timing. Many rounds make a late release all but certain to show.
TEST(DistMemory, ACompletedRendezvousSendLeavesTheSenderItsOwnMemory) {
  constexpr int rounds = 4000;
  constexpr int64_t n = 256;
  RunOptions options = testing::fast_options();
  options.allocators = cpu_allocators(2);
  int late = 0;
  run_ranks(
      2,
      [&](Communicator& comm) {
        const auto& mine = options.allocators[static_cast<std::size_t>(comm.rank())];
        for (int i = 0; i < rounds; ++i) {
          Tensor t = Tensor::zeros({n});
          if (comm.rank() == 0) {
            comm.send(t, 1);
            t = Tensor();
            if (mine->stats().allocated_bytes != 0) ++late;
          } else {
            comm.recv(t, 0);
          }
        }
      },
      options);
  EXPECT_EQ(late, 0) << "in " << late << " of " << rounds
                     << " rounds the sender's tensor was still allocated after its send "
                        "completed and the sender dropped it: the receiver must release the "
                        "sender's tensor before it lets the send complete";
}

TEST(DistMemory, DeterministicAllReduceNeedsOneChunkOfScratchOffRankZero) {
  for (int world : {2, 3, 5}) {
    RunOptions options = testing::fast_options();
    options.deterministic = true;
    run_ranks(
        world,
        [&](Communicator& comm) {
          const int64_t m = 64;
          Tensor t = testing::input(comm.rank(), m * world, DType::Float32);
          auto allocator = current_allocator(Device::cpu());
          allocator->reset_peak_stats();
          const int64_t before = allocator->stats().allocated_bytes;
          comm.all_reduce(t);
          EXPECT_EQ(allocator->stats().peak_allocated_bytes - before, comm.rank() == 0 ? 0 : m * 4)
              << "rank " << comm.rank() << " of " << world
              << ": the deterministic all_reduce accumulates in one chunk of scratch, except "
                 "on rank 0 whose own chunk is the first term";
        },
        options);
  }
}

TEST(DistMemory, BufferedMessagesAreChargedToTheSenderAlsoFromTheProgressThread) {
  constexpr int N = 3;
  constexpr int64_t m = 50;
  RunOptions options = testing::fast_options();
  options.rendezvous = false;
  run_ranks(
      N,
      [](Communicator& comm) {
        Tensor t = testing::input(comm.rank(), m * N, DType::Float32);
        auto allocator = current_allocator(Device::cpu());
        const MemoryStats before = allocator->stats();
        comm.all_reduce(t);
        const int64_t sync_allocs = allocator->stats().num_allocs - before.num_allocs;
        EXPECT_EQ(sync_allocs, 2 * (N - 1))
            << "buffered ring all_reduce: one message buffer per chunk this rank sends, from "
               "the sender's allocator";
        comm.all_reduce_async(t).wait();
        EXPECT_EQ(allocator->stats().num_allocs - before.num_allocs, 4 * (N - 1))
            << "the progress thread must allocate from the issuing rank's allocator";
        const int64_t in_flight = allocator->stats().peak_allocated_bytes - before.allocated_bytes;
        EXPECT_GT(in_flight, 0) << "buffered messages live in the sender's memory";
        EXPECT_LE(in_flight, comm.counters("all_reduce").bytes_sent / 2)
            << "at most the bytes one all_reduce of this rank sends are in flight";
        comm.barrier();  // every message has been taken and freed by its receiver
        EXPECT_EQ(allocator->stats().allocated_bytes, before.allocated_bytes)
            << "message buffers must be freed once received";
      },
      options);
}

}  // namespace
}  // namespace gtl::dist
