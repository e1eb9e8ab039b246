// Deterministic reductions (Communicator::set_deterministic, ring.h): every element's sum is
// taken in rank order 0..N-1 whatever the chunking, so a bucketed all-reduce, and a
// reduce-scatter followed by an all-gather, are bitwise equal to one flat all-reduce and to the
// serial sum x0 + x1 + ... + x(N-1). The inputs are random floats of mixed magnitudes, for which
// another summation order gives other bits: the test checks that the default ring does differ
// somewhere, so it could catch an order that is not rank order.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>

#include "dist_test_util.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

// Mantissas in [-1, 1) scaled by 2^-8 .. 2^8: sums of these round differently in every order.
std::vector<float> mixed(int rank, int64_t n) {
  std::mt19937 gen(1234 + rank);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-8, 8);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(mantissa(gen), exponent(gen));
  return v;
}

// The serial reference: acc = x0; acc += x1; ...; then / N once for an average.
std::vector<float> rank_order(int world, int64_t n, ReduceOp op) {
  std::vector<float> acc = mixed(0, n);
  for (int r = 1; r < world; ++r) {
    const std::vector<float> x = mixed(r, n);
    for (int64_t i = 0; i < n; ++i) acc[i] += x[i];
  }
  if (op == ReduceOp::Avg)
    for (float& a : acc) a /= static_cast<float>(world);
  return acc;
}

std::vector<uint32_t> bits(const std::vector<float>& v) {
  std::vector<uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
  return b;
}

RunOptions options(bool deterministic) {
  RunOptions o = testing::fast_options();
  o.deterministic = deterministic;
  return o;
}

TEST(DistDeterministic, BucketedAllReduceIsBitwiseTheFlatOne) {
  constexpr int64_t n = 1001;
  const std::vector<int64_t> edges = {0, 1, 300, 301, 777, n};  // buckets of 1, 299, 1, 476, 224
  std::atomic<bool> ring_differed{false};
  for (int world : {3, 5}) {
    for (bool deterministic : {true, false}) {
      run_ranks(
          world,
          [&](Communicator& comm) {
            EXPECT_EQ(comm.deterministic(), deterministic);
            Tensor flat = Tensor::from_vector(mixed(comm.rank(), n), {n});
            Tensor bucketed = Tensor::from_vector(mixed(comm.rank(), n), {n});
            comm.all_reduce(flat);
            for (std::size_t b = 0; b + 1 < edges.size(); ++b)
              comm.all_reduce(bucketed.slice(edges[b], edges[b + 1]));
            const bool same = bits(flat.to_vector()) == bits(bucketed.to_vector());
            if (!deterministic) {
              if (!same) ring_differed = true;
              return;
            }
            EXPECT_TRUE(same) << "deterministic all_reduce on rank " << comm.rank() << " of "
                              << world << ": bucketed and flat must be bitwise equal";
            EXPECT_EQ(bits(flat.to_vector()), bits(rank_order(world, n, ReduceOp::Sum)))
                << "deterministic all_reduce must sum in rank order 0..N-1 (ring.cpp, "
                   "ordered_reduce_scatter), rank "
                << comm.rank() << " of " << world;
          },
          options(deterministic));
    }
  }
  EXPECT_TRUE(ring_differed) << "the ring's chunk order never changed a sum: these inputs cannot "
                                "show that deterministic mode fixes the order";
}

TEST(DistDeterministic, ReduceScatterThenAllGatherIsBitwiseTheAllReduce) {
  constexpr int64_t m = 97;  // elements per rank's chunk
  std::atomic<bool> ring_differed{false};
  for (int world : {3, 5}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg}) {
      for (bool deterministic : {true, false}) {
        run_ranks(
            world,
            [&](Communicator& comm) {
              const int64_t n = m * world;
              Tensor reduced = Tensor::from_vector(mixed(comm.rank(), n), {n});
              comm.all_reduce(reduced, op);
              Tensor shard = Tensor::zeros({m}), gathered = Tensor::zeros({n});
              comm.reduce_scatter(Tensor::from_vector(mixed(comm.rank(), n), {n}), shard, op);
              comm.all_gather(shard, gathered);
              const bool same = bits(reduced.to_vector()) == bits(gathered.to_vector());
              if (!deterministic) {
                if (!same) ring_differed = true;
                return;
              }
              EXPECT_TRUE(same) << "deterministic reduce_scatter + all_gather ("
                                << reduce_op_name(op) << ") on rank " << comm.rank() << " of "
                                << world << " must be bitwise the all_reduce";
              EXPECT_EQ(bits(gathered.to_vector()), bits(rank_order(world, n, op)))
                  << "deterministic reduce_scatter must sum in rank order";
            },
            options(deterministic));
      }
    }
  }
  EXPECT_TRUE(ring_differed) << "ring all_reduce and pairwise reduce_scatter never disagreed: "
                                "these inputs cannot show a difference in order";
}

TEST(DistDeterministic, EveryDtypeAndOpIsExactAndTrafficIsTheRings) {
  for (int world = 1; world <= 5; ++world) {
    run_ranks(
        world,
        [&](Communicator& comm) {
          for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Int64}) {
            for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
              if (op == ReduceOp::Avg && !is_floating(dtype)) continue;
              for (int64_t n : {1, 7, 1023}) {
                Tensor t = testing::input(comm.rank(), n, dtype);
                comm.all_reduce(t, op);
                EXPECT_EQ(t.to_vector(), testing::reduced(world, n, dtype, op))
                    << "deterministic all_reduce(" << reduce_op_name(op) << ") of " << n << " "
                    << dtype_name(dtype) << ", rank " << comm.rank() << " of " << world;
              }
            }
          }
          // Traffic: (N-1)/N of the buffer per phase and direction, as the ring's.
          const int64_t m = 60, bytes = m * world * 4;
          comm.reset_counters();
          comm.all_reduce(testing::input(comm.rank(), m * world, DType::Float32));
          EXPECT_EQ(comm.counters("all_reduce").bytes_sent, 2 * (world - 1) * bytes / world)
              << "deterministic all_reduce must send 2(N-1)/N of the buffer";
          EXPECT_EQ(comm.counters("all_reduce").bytes_received, 2 * (world - 1) * bytes / world);
          Tensor shard = Tensor::zeros({m});
          comm.reduce_scatter(testing::input(comm.rank(), m * world, DType::Float32), shard);
          EXPECT_EQ(comm.counters("reduce_scatter").bytes_sent, (world - 1) * bytes / world);
          EXPECT_EQ(comm.counters("reduce_scatter").bytes_received, (world - 1) * bytes / world);
          EXPECT_EQ(shard.to_vector(),
                    testing::reduced(world, m, DType::Float32, ReduceOp::Sum, m * comm.rank()))
              << "rank r's shard is chunk r of the sum";
        },
        options(true));
  }
}

TEST(DistDeterministic, AsyncBucketsAsInDdpAreBitwiseTheFlatAllReduce) {
  constexpr int64_t n = 640;
  for (int world : {3, 5}) {
    run_ranks(
        world,
        [&](Communicator& comm) {
          Tensor grads = Tensor::from_vector(mixed(comm.rank(), n), {n});
          std::vector<Work> works;
          for (int64_t begin = 0; begin < n; begin += 150)  // buckets issued as "backward" goes
            works.push_back(comm.all_reduce_async(grads.slice(begin, std::min(n, begin + 150))));
          for (Work& w : works) w.wait();
          EXPECT_EQ(bits(grads.to_vector()), bits(rank_order(world, n, ReduceOp::Sum)))
              << "deterministic async buckets on rank " << comm.rank() << " of " << world;
        },
        options(true));
  }
}

TEST(DistDeterministic, SplitGroupsInheritTheMode) {
  run_ranks(
      4,
      [](Communicator& comm) {
        auto half = comm.split(comm.rank() / 2, comm.rank());
        EXPECT_TRUE(half->deterministic()) << "split() must keep deterministic mode";
      },
      options(true));
}

}  // namespace
}  // namespace gtl::dist
