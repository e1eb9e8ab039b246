// GPU paths: in-process ranks sharing one GPU (device copies and reduction kernels on each
// rank's stream), NCCL with one rank, and NCCL across all GPUs when there are at least two
// (collectives, and a rank that skips a barrier: a timeout, not a hang).
#include <cstdlib>
#include <string>

#include "dist_test_util.h"
#include "gtl/distributed/launch.h"
#include "gtl/distributed/mpi_communicator.h"
#include "gtl/distributed/nccl_communicator.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

TEST(DistGpu, InProcessRanksShareOneGpu) {
  GTL_REQUIRE_GPU();
  RunOptions options = testing::fast_options(std::chrono::seconds(30));
  options.device = Device::cuda(0);
  for (int world : {1, 2, 3, 4}) {
    run_ranks(
        world,
        [&](Communicator& comm) {
          for (DType dtype : {DType::Float32, DType::BFloat16, DType::Int32}) {
            for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
              Tensor t = testing::input(comm.rank(), 1023, dtype).to(Device::cuda(0));
              comm.all_reduce(t, op);
              EXPECT_EQ(t.to_vector(), testing::reduced(world, 1023, dtype, op))
                  << "GPU in-process all_reduce(" << reduce_op_name(op) << ") " << dtype_name(dtype)
                  << ", rank " << comm.rank() << " of " << world;
            }
          }
          Tensor out = Tensor::zeros({world * 7}, DType::Float32, Device::cuda(0));
          Work w = comm.all_gather_async(
              testing::input(comm.rank(), 7, DType::Float32).to(Device::cuda(0)), out);
          w.wait();
          for (int q = 0; q < world; ++q)
            EXPECT_EQ(out.slice(7 * q, 7 * q + 7).to_vector(), testing::values(q, 7));
        },
        options);
  }
}

TEST(DistGpu, InProcessGpuRendezvousPointToPointAndDeterministicMode) {
  // Rendezvous on one GPU: the receiver copies from the sender's tensor on its own stream after
  // the sender's event, and the sender's stream waits for the receiver's copy.
  GTL_REQUIRE_GPU();
  for (bool deterministic : {false, true}) {
    RunOptions options = testing::fast_options(std::chrono::seconds(30));
    options.device = Device::cuda(0);
    options.deterministic = deterministic;
    for (int world : {2, 3}) {
      run_ranks(
          world,
          [&](Communicator& comm) {
            const int r = comm.rank(), right = (r + 1) % world, left = (r + world - 1) % world;
            const Device gpu = Device::cuda(0);
            Tensor mine = testing::input(r, 33, DType::Float32).to(gpu);
            Tensor got = Tensor::zeros({33}, DType::Float32, gpu);
            comm.send_recv(mine, right, got, left);
            mine.fill_(0);  // after send_recv returns the sender may overwrite its tensor
            EXPECT_EQ(got.to_vector(), testing::values(left, 33)) << "GPU send_recv, rank " << r;
            Tensor shard = Tensor::zeros({11}, DType::Float16, gpu);
            comm.reduce_scatter(testing::input(r, 11 * world, DType::Float16).to(gpu), shard);
            EXPECT_EQ(shard.to_vector(),
                      testing::reduced(world, 11, DType::Float16, ReduceOp::Sum, 11 * r))
                << "GPU reduce_scatter, deterministic " << deterministic << ", rank " << r;
            Tensor t = testing::input(r, 1023, DType::Float32).to(gpu);
            comm.all_reduce(t, ReduceOp::Avg);
            EXPECT_EQ(t.to_vector(), testing::reduced(world, 1023, DType::Float32, ReduceOp::Avg))
                << "GPU all_reduce, deterministic " << deterministic << ", rank " << r;
          },
          options);
    }
  }
}

TEST(DistGpu, NcclOneRank) {
  GTL_REQUIRE_GPU();
  if (!nccl_available()) GTEST_SKIP() << "this build has no NCCL";
  auto comms = nccl_communicators({0});
  Communicator& comm = *comms[0];
  Tensor t = testing::input(0, 1023, DType::Float32).to(Device::cuda(0));
  comm.all_reduce(t, ReduceOp::Avg);
  EXPECT_EQ(t.to_vector(), testing::values(0, 1023));
  Tensor out = Tensor::zeros({5}, DType::Float32, Device::cuda(0));
  comm.all_gather(t.slice(0, 5), out);
  EXPECT_EQ(out.to_vector(), testing::values(0, 5));
  comm.barrier();
  EXPECT_THROW(comm.set_deterministic(true), Error) << "NCCL cannot promise rank-order sums";
  const std::vector<TraceEvent> ev = comm.trace()->events();
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].op, "all_reduce");
  EXPECT_EQ(ev[1].group_seq, 1);
}

// Without a launcher a program gets an in-process rank even here (groups_test.cpp); asking for
// NCCL by name gives a one-rank NCCL world on GPU 0.
TEST(DistGpu, WithoutALauncherNcclOnlyWhenAskedFor) {
  GTL_REQUIRE_GPU();
  if (!nccl_available()) GTEST_SKIP() << "this build has no NCCL";
  if (launched_by_mpi()) GTEST_SKIP() << "needs a process not started by mpirun or srun";
  const char* old = std::getenv("GTL_DIST_BACKEND");
  const std::string saved = old ? old : "";
  unsetenv("WORLD_SIZE");
  unsetenv("GTL_DIST_BACKEND");
  EXPECT_EQ(init_from_environment()->backend(), "in-process");
  setenv("GTL_DIST_BACKEND", "nccl", 1);
  EXPECT_EQ(init_from_environment()->backend(), "nccl");
  if (old) {
    setenv("GTL_DIST_BACKEND", saved.c_str(), 1);
  } else {
    unsetenv("GTL_DIST_BACKEND");
  }
}

TEST(DistGpu, NcclAcrossAllGpus) {
  GTL_REQUIRE_GPU();
  if (!nccl_available()) GTEST_SKIP() << "this build has no NCCL";
  const int world = cuda_device_count();
  if (world < 2) GTEST_SKIP() << "multi-GPU NCCL needs at least 2 GPUs, found " << world;
  run_nccl_ranks(world, [&](Communicator& comm) {
    const Device dev = Device::cuda(comm.rank());
    Tensor t = testing::input(comm.rank(), 1023, DType::Float16).to(dev);
    comm.all_reduce(t);
    EXPECT_EQ(t.to_vector(), testing::reduced(world, 1023, DType::Float16, ReduceOp::Sum));
    Tensor out = Tensor::zeros({13}, DType::Float32, dev);
    comm.reduce_scatter(testing::input(comm.rank(), 13 * world, DType::Float32).to(dev), out);
    EXPECT_EQ(out.to_vector(),
              testing::reduced(world, 13, DType::Float32, ReduceOp::Sum, 13 * comm.rank()));
  });
}

TEST(DistGpu, NcclRankThatSkipsABarrierTimesOutInsteadOfHanging) {
  GTL_REQUIRE_GPU();
  if (!nccl_available()) GTEST_SKIP() << "this build has no NCCL";
  const int world = cuda_device_count();
  if (world < 2) GTEST_SKIP() << "multi-GPU NCCL needs at least 2 GPUs, found " << world;
  try {
    run_nccl_ranks(world, [&](Communicator& comm) {
      comm.set_timeout(std::chrono::milliseconds(500));
      if (comm.rank() != 1) comm.barrier();  // rank 1 never joins: NCCL would wait forever
    });
    FAIL() << "expected DistError: rank 1 skipped the barrier";
  } catch (const DistError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("barrier"), std::string::npos) << message;
    EXPECT_NE(message.find("did not finish in 0.5"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace gtl::dist
