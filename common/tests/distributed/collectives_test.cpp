// Every collective of the in-process backend on the CPU, for world sizes 1 to 8, odd sizes and
// every dtype and reduction, against a serial computation. Inputs are small integers, so every
// result is exact and compared bit for bit.
#include <algorithm>
#include <atomic>
#include <cmath>

#include "dist_test_util.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

using testing::input;
using testing::reduced;

const DType kDtypes[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Int32,
                         DType::Int64};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};

TEST(DistCollectives, AllReduceEveryDtypeOpAndSize) {
  for (int world = 1; world <= 8; ++world) {
    run_ranks(world, [&](Communicator& comm) {
      for (int64_t n : {1, 7, 1023}) {
        for (DType dtype : kDtypes) {
          for (ReduceOp op : kOps) {
            if (op == ReduceOp::Avg && !is_floating(dtype)) continue;
            Tensor t = input(comm.rank(), n, dtype);
            comm.all_reduce(t, op);
            EXPECT_EQ(t.to_vector(), reduced(world, n, dtype, op))
                << "all_reduce(" << reduce_op_name(op) << ") of " << n << " " << dtype_name(dtype)
                << " on rank " << comm.rank() << " of " << world
                << ": every rank must end with the reduction over all ranks (ring.cpp)";
          }
        }
      }
    });
  }
}

TEST(DistCollectives, MaxAndMinPropagateANaNFromAnyRank) {
  // All of one rank's elements are NaN: across the ring's chunks the NaN reaches the reduction
  // both as the local value and as the received one, and must win either way.
  constexpr int64_t n = 7;
  for (int world = 2; world <= 5; ++world) {
    for (int nan_rank = 0; nan_rank < world; ++nan_rank) {
      run_ranks(world, [&](Communicator& comm) {
        for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
          for (ReduceOp op : {ReduceOp::Max, ReduceOp::Min}) {
            std::vector<float> v = testing::values(comm.rank(), n);
            if (comm.rank() == nan_rank) std::fill(v.begin(), v.end(), NAN);
            Tensor t = Tensor::from_vector(v, {n}, dtype);
            comm.all_reduce(t, op);
            for (float x : t.to_vector())
              EXPECT_TRUE(std::isnan(x))
                  << "all_reduce(" << reduce_op_name(op) << ") of " << dtype_name(dtype)
                  << " with NaN on rank " << nan_rank << " of " << world << " gave " << x
                  << " on rank " << comm.rank();
          }
        }
      });
    }
  }
}

TEST(DistCollectives, AllReduceOfMultiDimensionalTensorKeepsShape) {
  run_ranks(3, [](Communicator& comm) {
    Tensor t = input(comm.rank(), 12, DType::Float32).reshape({3, 4});
    comm.all_reduce(t);
    EXPECT_EQ(t.shape(), (Shape{3, 4}));
    EXPECT_EQ(t.to_vector(), reduced(3, 12, DType::Float32, ReduceOp::Sum));
  });
}

TEST(DistCollectives, AverageOfNonIntegersWithinTolerance) {
  // 0.1 * (r + 1) is not exact in float: the ring's order differs from the serial sum, so
  // compare within a few ulps of float32.
  run_ranks(5, [](Communicator& comm) {
    Tensor t = Tensor::full({33}, 0.1 * (comm.rank() + 1));
    comm.all_reduce(t, ReduceOp::Avg);
    gtl::testing::expect_close(t, Tensor::full({33}, 0.3), {1e-6, 1e-6},
                               "all_reduce(avg) of 0.1, 0.2, ..., 0.5");
  });
}

TEST(DistCollectives, ReduceScatterEveryDtypeOpAndChunk) {
  for (int world = 1; world <= 8; ++world) {
    run_ranks(world, [&](Communicator& comm) {
      for (int64_t m : {1, 7, 130}) {
        for (DType dtype : kDtypes) {
          for (ReduceOp op : kOps) {
            if (op == ReduceOp::Avg && !is_floating(dtype)) continue;
            const Tensor in = input(comm.rank(), m * world, dtype);
            const std::vector<float> before = in.to_vector();
            Tensor out = Tensor::zeros({m}, dtype);
            comm.reduce_scatter(in, out, op);
            EXPECT_EQ(out.to_vector(), reduced(world, m, dtype, op, m * comm.rank()))
                << "reduce_scatter(" << reduce_op_name(op) << ") " << dtype_name(dtype) << ": rank "
                << comm.rank() << " of " << world << " must receive chunk " << comm.rank()
                << " of the reduction";
            EXPECT_EQ(in.to_vector(), before) << "reduce_scatter must not modify its input";
          }
        }
      }
    });
  }
}

TEST(DistCollectives, AllGatherEverySize) {
  for (int world = 1; world <= 8; ++world) {
    run_ranks(world, [&](Communicator& comm) {
      for (int64_t m : {1, 7, 1023}) {
        for (DType dtype : {DType::Float32, DType::BFloat16, DType::Int64}) {
          Tensor out = Tensor::zeros({world * m}, dtype);
          comm.all_gather(input(comm.rank(), m, dtype), out);
          std::vector<float> expected;
          for (int r = 0; r < world; ++r) {
            const auto v = input(r, m, dtype).to_vector();
            expected.insert(expected.end(), v.begin(), v.end());
          }
          EXPECT_EQ(out.to_vector(), expected)
              << "all_gather of " << m << " " << dtype_name(dtype) << " on rank " << comm.rank()
              << " of " << world << ": chunk r of the output must be rank r's input";
        }
      }
    });
  }
}

TEST(DistCollectives, BroadcastFromEveryRoot) {
  for (int world = 1; world <= 8; ++world) {
    run_ranks(world, [&](Communicator& comm) {
      for (int root = 0; root < world; ++root) {
        for (int64_t n : {1, 7, 1023, (1 << 18) + 3}) {  // the last one spans two 1 MiB pieces
          Tensor t = input(comm.rank(), n, DType::Float32);
          comm.broadcast(t, root);
          EXPECT_EQ(t.to_vector(), input(root, n, DType::Float32).to_vector())
              << "broadcast from root " << root << " to rank " << comm.rank() << " of " << world;
        }
      }
    });
  }
}

TEST(DistCollectives, BarrierLetsNobodyPassEarly) {
  for (int world = 1; world <= 8; ++world) {
    std::atomic<int> arrived{0};
    run_ranks(world, [&](Communicator& comm) {
      for (int round = 1; round <= 3; ++round) {
        arrived.fetch_add(1);
        comm.barrier();
        EXPECT_GE(arrived.load(), round * world)
            << "rank " << comm.rank() << " left barrier " << round << " before all " << world
            << " ranks arrived";
        comm.barrier();  // nobody starts the next round before all have checked
      }
    });
  }
}

TEST(DistCollectives, AsyncOnCpuHasCompletedAfterWait) {
  // That it really runs in the background is async_test.cpp's subject.
  run_ranks(4, [](Communicator& comm) {
    Tensor t = input(comm.rank(), 100, DType::Float32);
    Work w = comm.all_reduce_async(t);
    w.wait();
    EXPECT_TRUE(w.completed()) << "a Work must report completion once wait() has returned";
    EXPECT_EQ(t.to_vector(), reduced(4, 100, DType::Float32, ReduceOp::Sum));
  });
}

TEST(DistCollectives, BufferedModeGivesTheSameResults) {
  // The default is rendezvous; buffered sends (RunOptions::rendezvous = false) must not change
  // any result.
  RunOptions options = testing::fast_options();
  options.rendezvous = false;
  for (int world = 1; world <= 5; ++world) {
    run_ranks(
        world,
        [&](Communicator& comm) {
          const int r = comm.rank();
          Tensor t = input(r, 1023, DType::Float32);
          comm.all_reduce(t, ReduceOp::Avg);
          EXPECT_EQ(t.to_vector(), reduced(world, 1023, DType::Float32, ReduceOp::Avg))
              << "buffered all_reduce, rank " << r << " of " << world;
          Tensor shard = Tensor::zeros({9}, DType::Int64);
          comm.reduce_scatter(input(r, 9 * world, DType::Int64), shard, ReduceOp::Max);
          EXPECT_EQ(shard.to_vector(), reduced(world, 9, DType::Int64, ReduceOp::Max, 9 * r))
              << "buffered reduce_scatter, rank " << r << " of " << world;
          Tensor gathered = Tensor::zeros({5 * world});
          comm.all_gather(input(r, 5, DType::Float32), gathered);
          for (int q = 0; q < world; ++q)
            EXPECT_EQ(gathered.slice(5 * q, 5 * q + 5).to_vector(), testing::values(q, 5));
          Tensor b = input(r, 17, DType::Float32);
          comm.broadcast(b, world - 1);
          EXPECT_EQ(b.to_vector(), testing::values(world - 1, 17));
          comm.barrier();
        },
        options);
  }
}

TEST(DistCollectives, EachRankHasItsOwnAllocator) {
  run_ranks(3, [](Communicator& comm) {
    const auto before = current_allocator(Device::cpu())->stats().allocated_bytes;
    Tensor t = Tensor::zeros({1000 * (comm.rank() + 1)});
    EXPECT_EQ(current_allocator(Device::cpu())->stats().allocated_bytes - before,
              4000 * (comm.rank() + 1))
        << "rank " << comm.rank() << ": allocator statistics must count this rank's tensors only";
  });
}

TEST(DistCollectives, WrongSizesFailOnTheCallingRank) {
  run_ranks(2, [](Communicator& comm) {
    Tensor out = Tensor::zeros({3});
    EXPECT_THROW(comm.reduce_scatter(Tensor::zeros({7}), out), Error);
    EXPECT_THROW(comm.all_gather(Tensor::zeros({2}), out), Error);
    EXPECT_THROW(comm.all_reduce(Tensor::zeros({2}, DType::Int32), ReduceOp::Avg), Error);
    EXPECT_THROW(comm.broadcast(out, 2), Error);
    EXPECT_THROW(comm.send(out, comm.rank()), Error);
  });
}

}  // namespace
}  // namespace gtl::dist
