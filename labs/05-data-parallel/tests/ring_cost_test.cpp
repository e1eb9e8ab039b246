// TODO 1: what makes a ring fast, graded exactly instead of by a timing on a shared CPU. The
// messages (2(N-1) send_recv calls of one chunk each way, to r+1 and from r-1) are checked by
// RingAllReduce.*; this test adds the memory. At sizes drawn from the grading seed (N = 3 and 5, n
// not divisible by N) the call must allocate exactly what the spec's buffers need, once each: one
// receive chunk and the zero-padded tail (lab05_cases.h derives the budget from c = ceil(n/N)),
// read from each rank's own allocator (RunOptions::allocators). A ring that gets there without
// the ring's messages (memory shared between the in-process ranks) fails first on the messages.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "data_parallel.h"
#include "gtl/memory/allocator.h"
#include "gtl_judge_output.h"
#include "lab05_cases.h"
#include "lab05_student_call.h"
#include "lab05_test_util.h"

namespace lab05 {
namespace {

using lab05_cases::RingCase;
using lab05_cases::RingCost;

std::string where(const RingCase& c, int rank) {
  return "ring_all_reduce, N = " + std::to_string(c.world) + " ranks, n = " + std::to_string(c.n) +
         " elements, rank " + std::to_string(rank) + " (" + gtl::test_seed::describe() + ")";
}

// One rank's call: its result, its messages and what its allocator saw during the call.
struct RankRun {
  std::vector<float> result;
  std::string traffic;  // what is wrong with its messages ("" if nothing)
  int64_t calls = 0, bytes_sent = 0, bytes_received = 0;  // every call of the communicator
  int64_t scratch_peak = 0;    // peak allocated above what the rank held before
  int64_t allocations = 0;     // allocate() calls during the call
  int64_t left_allocated = 0;  // bytes still allocated after it, beyond before
};

std::vector<RankRun> run_ring(const RingCase& c) {
  std::vector<RankRun> runs(static_cast<std::size_t>(c.world));
  gtl::dist::RunOptions options = testing::fast();
  for (int r = 0; r < c.world; ++r) options.allocators.push_back(gtl::make_cpu_allocator());
  gtl::dist::run_ranks(
      c.world,
      [&](Communicator& comm) {
        RankRun& run = runs[static_cast<std::size_t>(comm.rank())];
        Tensor t = Tensor::from_vector(lab05_cases::ring_input(c, comm.rank()), {c.n});
        gtl::Allocator& mine = *options.allocators[static_cast<std::size_t>(comm.rank())];
        mine.reset_peak_stats();
        const gtl::MemoryStats before = mine.stats();
        {
          const auto call = lab05_student_call::todo1();  // the core's collectives refuse to run
          ring_all_reduce(comm, t);
        }
        const gtl::MemoryStats after = mine.stats();
        run.scratch_peak = after.peak_allocated_bytes - before.allocated_bytes;
        run.allocations = after.num_allocs - before.num_allocs;
        run.left_allocated = after.allocated_bytes - before.allocated_bytes;
        run.traffic = testing::ring_traffic_problem(comm, c.n);
        const gtl::dist::OpCounters all = comm.total_counters();
        run.calls = all.calls, run.bytes_sent = all.bytes_sent;
        run.bytes_received = all.bytes_received;
        run.result = t.to_vector();
      },
      options);
  return runs;
}

// The memory of the call beyond the caller's tensor, from the rank's own allocator: the peak, the
// number of allocations and what is left when it returns (lab05_cases.h derives the budget).
TEST(RingCost, SeededSizesAllocateOneReceiveChunkAndThePaddedTailOnce) {
  gtl::judge::Outputs recorded("RingCost.SeededSizesAllocateOneReceiveChunkAndThePaddedTailOnce");
  for (const RingCase& c : lab05_cases::seeded_ring_cost_cases()) {
    const RingCost want = lab05_cases::ring_cost(c.world, c.n);
    const std::vector<RankRun> runs = run_ring(c);
    const std::vector<float> sum = lab05_cases::ring_sum(c);
    for (int r = 0; r < c.world; ++r) {
      const RankRun& run = runs[static_cast<std::size_t>(r)];
      recorded.record_digest(run.result.data(), run.result.size());
      recorded.record(run.calls), recorded.record(run.bytes_sent);
      recorded.record(run.bytes_received);
      recorded.record(run.scratch_peak);
      recorded.record(run.allocations);
      recorded.record(run.left_allocated);
      ASSERT_EQ(testing::bitwise_diff(run.result, sum), "")
          << where(c, r) << ": the ring's sum is wrong (RingAllReduce.* says more); its memory "
          << "is checked once it is right";
      ASSERT_EQ(run.traffic, "") << "(" << gtl::test_seed::describe() << ") its memory is checked "
                                 << "once its messages are the ring's";
      EXPECT_TRUE(run.scratch_peak == want.scratch_bytes &&
                  run.allocations <= want.max_allocations && run.left_allocated == 0)
          << where(c, r) << ": expected the call to allocate, beyond the caller's tensor, one "
          << "receive chunk and the " << want.padded_chunks << " zero-padded tail chunk(s), each "
          << "of c = " << want.chunk << " floats and each allocated once: a peak of (1 + "
          << want.padded_chunks << ") * " << want.chunk << " * 4 = " << want.scratch_bytes
          << " bytes in at most " << want.max_allocations << " allocations, all freed on return; "
          << "got a peak of " << run.scratch_peak << " bytes in " << run.allocations
          << " allocations, " << run.left_allocated << " bytes still allocated. "
          << (run.scratch_peak > want.scratch_bytes
                  ? "More than the budget: a temporary as large as the tensor (a padded copy of "
                    "the whole buffer, or a sum computed into a new tensor) doubles the "
                    "footprint and adds a full pass over memory each way (a padded copy of the "
                    "whole buffer measured 0.15-0.23x of the core's ring on the loaded build "
                    "machine, views about 0.6x). "
                  : "")
          << (run.allocations > want.max_allocations
                  ? "More allocations than buffers: a fresh buffer at each of the 2(N-1) steps "
                    "costs an allocation per step, and on a GPU without a caching allocator "
                    "each cudaMalloc/cudaFree synchronises the device. "
                  : "")
          << (run.scratch_peak < want.scratch_bytes
                  ? "Less than the spec's buffers: every chunk that is not wholly inside the "
                    "tensor must be a zero-padded chunk of c floats, and the reduce-scatter needs "
                    "one chunk to receive into. "
                  : "")
          << "Revisit the chunks as views of the tensor (data_parallel.h) and allocate the "
          << "receive chunk once, before the first step";
    }
  }
}

}  // namespace
}  // namespace lab05
