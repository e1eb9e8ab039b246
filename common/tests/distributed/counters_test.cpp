// The communication counters against the analytic traffic of the ring algorithms (ring.h).
// Labs grade communication volume with these numbers, so they must be exact to the byte.
//
// A buffer of n elements is cut into N chunks, chunk i holding (i+1)n/N - in/N elements.
// All-reduce on rank r: the reduce-scatter half sends every chunk but r+1 and receives every
// chunk but r; the all-gather half sends every chunk but r+2 and receives every chunk but r+1.
// When N divides n that is 2(N-1)/N of the buffer each way.
#include "dist_test_util.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

int64_t chunk_bytes(int64_t n, int world, int i, int64_t elem) {
  i = ((i % world) + world) % world;
  return ((i + 1) * n / world - i * n / world) * elem;
}

TEST(DistCounters, AllReduceMovesTheRingsTraffic) {
  for (int world = 1; world <= 8; ++world) {
    for (int64_t n : {1, 7, 1023, 1680}) {  // 1680 is divisible by 1..8
      run_ranks(world, [&](Communicator& comm) {
        const int r = comm.rank();
        const int64_t bytes = n * 4;
        comm.all_reduce(testing::input(r, n, DType::Float32));
        const OpCounters c = comm.counters("all_reduce");
        const int64_t sent = world == 1 ? 0
                                        : 2 * bytes - chunk_bytes(n, world, r + 1, 4) -
                                              chunk_bytes(n, world, r + 2, 4);
        const int64_t received =
            world == 1 ? 0
                       : 2 * bytes - chunk_bytes(n, world, r, 4) - chunk_bytes(n, world, r + 1, 4);
        EXPECT_EQ(c.calls, 1);
        EXPECT_EQ(c.bytes_sent, sent) << "all_reduce of " << n << " floats, rank " << r << " of "
                                      << world << ": bytes sent by the ring";
        EXPECT_EQ(c.bytes_received, received) << "all_reduce bytes received, rank " << r;
        if (n % world == 0) {
          EXPECT_EQ(c.bytes_sent, 2 * (world - 1) * bytes / world)
              << "a ring all-reduce sends 2(N-1)/N of the buffer per rank";
        }
      });
    }
  }
}

TEST(DistCounters, ReduceScatterAllGatherBroadcastBarrierSendRecv) {
  for (int world = 2; world <= 8; ++world) {
    run_ranks(world, [&](Communicator& comm) {
      const int r = comm.rank();
      const int64_t m = 13;  // elements per chunk
      Tensor out = Tensor::zeros({m}, DType::Float16);
      comm.reduce_scatter(testing::input(r, m * world, DType::Float16), out);
      EXPECT_EQ(comm.counters("reduce_scatter").bytes_sent, (world - 1) * m * 2)
          << "reduce_scatter sends (N-1)/N of its input";
      EXPECT_EQ(comm.counters("reduce_scatter").bytes_received, (world - 1) * m * 2);

      Tensor gathered = Tensor::zeros({m * world}, DType::Int64);
      comm.all_gather(testing::input(r, m, DType::Int64), gathered);
      EXPECT_EQ(comm.counters("all_gather").bytes_sent, (world - 1) * m * 8)
          << "all_gather forwards N-1 chunks";
      EXPECT_EQ(comm.counters("all_gather").bytes_received, (world - 1) * m * 8);

      const int root = world - 1;
      comm.broadcast(Tensor::zeros({m}), root);
      const int pos = (r - root + world) % world;  // place along the chain from the root
      EXPECT_EQ(comm.counters("broadcast").bytes_sent, pos < world - 1 ? m * 4 : 0)
          << "broadcast chain: everybody but the last rank forwards the buffer";
      EXPECT_EQ(comm.counters("broadcast").bytes_received, pos > 0 ? m * 4 : 0);

      comm.barrier();
      EXPECT_EQ(comm.counters("barrier").calls, 1);
      EXPECT_EQ(comm.counters("barrier").bytes_sent, 0) << "a barrier moves no payload";

      if (r == 0) comm.send(Tensor::zeros({m}), 1);
      if (r == 1) comm.recv(Tensor::zeros({m}), 0);
      EXPECT_EQ(comm.counters("send").bytes_sent, r == 0 ? m * 4 : 0);
      EXPECT_EQ(comm.counters("recv").bytes_received, r == 1 ? m * 4 : 0);

      const OpCounters total = comm.total_counters();
      EXPECT_EQ(total.calls, 4 + (r <= 1 ? 1 : 0));
      comm.reset_counters();
      EXPECT_EQ(comm.total_counters().calls, 0);
    });
  }
}

}  // namespace
}  // namespace gtl::dist
