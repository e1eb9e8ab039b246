// The MPI backend with 1 to 4 processes: ctest runs this binary directly (one process) and under
// `mpirun -np N`. Every process runs every test; the ring's results and counters must match the
// in-process backend's exactly.
#include <cmath>

#include "dist_test_util.h"
#include "gtl/distributed/mpi_communicator.h"
#include "gtl/distributed/process_grid.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

Communicator& world() {
  static std::unique_ptr<Communicator> comm = [] {
    auto c = mpi_world();
    c->set_timeout(std::chrono::seconds(10));
    return c;
  }();
  return *comm;
}

TEST(DistMpi, AllReduceEveryOpAndSize) {
  Communicator& comm = world();
  const int n_ranks = comm.world_size();
  for (int64_t n : {1, 7, 1023}) {
    for (DType dtype : {DType::Float32, DType::Float16, DType::Int64}) {
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
        if (op == ReduceOp::Avg && !is_floating(dtype)) continue;
        Tensor t = testing::input(comm.rank(), n, dtype);
        comm.all_reduce(t, op);
        EXPECT_EQ(t.to_vector(), testing::reduced(n_ranks, n, dtype, op))
            << "MPI all_reduce(" << reduce_op_name(op) << ") of " << n << " " << dtype_name(dtype)
            << ", rank " << comm.rank() << " of " << n_ranks;
      }
    }
  }
}

TEST(DistMpi, CountersFollowTheRing) {
  Communicator& comm = world();
  const int n = comm.world_size();
  comm.reset_counters();
  const int64_t numel = 1680;  // divisible by 1..8
  comm.all_reduce(testing::input(comm.rank(), numel, DType::Float32));
  EXPECT_EQ(comm.counters("all_reduce").bytes_sent, 2 * (n - 1) * numel * 4 / n)
      << "a ring all-reduce sends 2(N-1)/N of the buffer per rank";
  EXPECT_EQ(comm.counters("all_reduce").bytes_received, 2 * (n - 1) * numel * 4 / n);
}

TEST(DistMpi, ReduceScatterAllGatherBroadcast) {
  Communicator& comm = world();
  const int n = comm.world_size(), r = comm.rank();
  Tensor out = Tensor::zeros({9});
  comm.reduce_scatter(testing::input(r, 9 * n, DType::Float32), out);
  EXPECT_EQ(out.to_vector(), testing::reduced(n, 9, DType::Float32, ReduceOp::Sum, 9 * r));
  Tensor gathered = Tensor::zeros({5 * n}, DType::Int32);
  comm.all_gather(testing::input(r, 5, DType::Int32), gathered);
  for (int q = 0; q < n; ++q) {
    EXPECT_EQ(gathered.slice(5 * q, 5 * q + 5).to_vector(), testing::values(q, 5));
  }
  Tensor b = testing::input(r, 1023, DType::Float32);
  comm.broadcast(b, n - 1);
  EXPECT_EQ(b.to_vector(), testing::values(n - 1, 1023));
  comm.barrier();
}

TEST(DistMpi, SendRecvAroundTheRing) {
  Communicator& comm = world();
  const int n = comm.world_size(), r = comm.rank();
  if (n == 1) GTEST_SKIP() << "send/recv needs at least 2 processes (mpirun -np 2)";
  Tensor x = Tensor::full({6}, r == 0 ? 1 : 0);
  if (r > 0) comm.recv(x, r - 1);
  EXPECT_EQ(x.to_vector(), std::vector<float>(6, float(r + 1)));
  x.fill_(r + 2);
  if (r < n - 1) comm.send(x, r + 1);
}

TEST(DistMpi, SendRecvIsendIrecvAndTheirTrace) {
  Communicator& comm = world();
  const int n = comm.world_size(), r = comm.rank();
  if (n == 1) GTEST_SKIP() << "point to point needs at least 2 processes (mpirun -np 2)";
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  comm.trace()->clear();
  Tensor got = Tensor::zeros({3, 4});
  comm.send_recv(testing::input(r, 12, DType::Float32).reshape({3, 4}), right, got, left);
  EXPECT_EQ(got.to_vector(), testing::values(left, 12)) << "MPI send_recv around the ring";
  Tensor got2 = Tensor::zeros({5}, DType::Int64);
  Work sent = comm.isend(testing::input(r, 5, DType::Int64), right);
  Work received = comm.irecv(got2, left);
  received.wait();
  sent.wait();
  EXPECT_EQ(got2.to_vector(), testing::values(left, 5)) << "MPI isend/irecv around the ring";
  const std::vector<TraceEvent> ev = comm.trace()->events();
  ASSERT_EQ(ev.size(), 5u) << "send_recv, isend, irecv and two waits";
  EXPECT_EQ(ev[0].op, "send_recv");
  EXPECT_EQ(ev[0].peers, (std::vector<int>{right, left}));
  EXPECT_EQ(ev[0].bytes_sent, 48);
  EXPECT_EQ(ev[0].bytes_received, 48);
  EXPECT_EQ(ev[1].op, "isend");
  EXPECT_EQ(ev[1].bytes_sent, 40);
  EXPECT_EQ(ev[3].work_id, ev[2].work_id) << "the first wait is the irecv's";
}

TEST(DistMpi, DeterministicModeSumsInRankOrder) {
  Communicator& comm = world();
  const int n = comm.world_size(), r = comm.rank();
  // Mixed magnitudes: 1e-3 * (rank+1) + 2^(10 * i % 3) style values round differently per order.
  auto x = [](int rank, int64_t i) {
    return std::ldexp(1.0f + 0.123f * float((i * 7 + rank * 5) % 13), int((i + rank) % 17) - 8);
  };
  constexpr int64_t numel = 103;
  std::vector<float> mine(numel), expected(numel);
  for (int64_t i = 0; i < numel; ++i) {
    mine[i] = x(r, i);
    expected[i] = x(0, i);
    for (int q = 1; q < n; ++q) expected[i] += x(q, i);  // acc = x0; acc += x1; ...
  }
  comm.set_deterministic(true);
  Tensor flat = Tensor::from_vector(mine, {numel});
  Tensor bucketed = Tensor::from_vector(mine, {numel});
  comm.all_reduce(flat);
  comm.all_reduce(bucketed.slice(0, 40));
  comm.all_reduce(bucketed.slice(40, numel));
  comm.set_deterministic(false);
  EXPECT_EQ(flat.to_vector(), expected) << "MPI deterministic all_reduce: rank-order sums";
  EXPECT_EQ(bucketed.to_vector(), expected) << "MPI deterministic bucketed all_reduce";
}

TEST(DistMpi, SplitAndGrid) {
  Communicator& comm = world();
  const int n = comm.world_size(), r = comm.rank();
  auto sub = comm.split(r % 2, r);
  ASSERT_NE(sub, nullptr);
  EXPECT_EQ(sub->world_size(), (n - r % 2 + 1) / 2);
  Tensor t = Tensor::full({2}, 1);
  sub->all_reduce(t);
  EXPECT_EQ(t.to_vector(), std::vector<float>(2, float(sub->world_size())));
  if (n == 4) {
    ProcessGrid grid(comm, 2, 1, 2);
    EXPECT_EQ(grid.tp_rank(), r % 2);
    EXPECT_EQ(grid.dp_rank(), r / 2);
    Tensor w = Tensor::full({1}, r);
    grid.dp_group().all_reduce(w);
    EXPECT_EQ(w.item(), float(r % 2 + r % 2 + 2)) << "dp group of rank " << r << " is {tp, tp+2}";
  }
}

}  // namespace
}  // namespace gtl::dist
