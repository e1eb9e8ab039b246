// Point to point as NCCL and MPI behave: a send completes only when the receiver has the data
// (in-process rendezvous mode, the default), so "everybody sends, then everybody receives"
// deadlocks, and the timeout reports it with what every rank waits for; send_recv and
// isend/irecv do the same exchange without deadlock; a receive of the wrong shape says so.
#include <gmock/gmock.h>

#include <chrono>
#include <mutex>

#include "dist_test_util.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

int right_of(const Communicator& c) {
  return (c.rank() + 1) % c.world_size();
}
int left_of(const Communicator& c) {
  return (c.rank() + c.world_size() - 1) % c.world_size();
}

std::string run_and_get_error(int world, const std::function<void(Communicator&)>& fn,
                              RunOptions options) {
  try {
    run_ranks(world, fn, options);
  } catch (const DistError& e) {
    return e.what();
  }
  return "";
}

TEST(DistP2P, EverybodySendsFirstDeadlocksAndTheTimeoutSaysWhoWaitsForWhom) {
  for (int world : {2, 3}) {
    const auto start = std::chrono::steady_clock::now();
    const std::string error = run_and_get_error(
        world,
        [](Communicator& comm) {
          Tensor mine = Tensor::ones({16}), theirs = Tensor::zeros({16});
          comm.send(mine, right_of(comm));  // nobody gets past this: nobody receives yet
          comm.recv(theirs, left_of(comm));
        },
        testing::fast_options(std::chrono::seconds(1)));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 10.0) << "a deadlock must end at the timeout (1 s), not hang";
    EXPECT_THAT(error, HasSubstr("send timed out after 1 s"));
    EXPECT_THAT(error, HasSubstr("deadlock or hang: no progress for 1."))
        << "world " << world << ": the report must say how long nothing moved";
    for (int r = 0; r < world; ++r) {
      EXPECT_THAT(error, ContainsRegex("rank " + std::to_string(r) + " blocked in send to rank " +
                                       std::to_string((r + 1) % world) + " \\([0-9.]+ s\\)"))
          << "world " << world << ": every rank blocked in its send must be listed with its "
          << "peer (rendezvous sends in in_process.cpp); got: " << error;
    }
  }
}

TEST(DistP2P, BufferedModeLetsEverybodySendFirst) {
  RunOptions options = testing::fast_options();
  options.rendezvous = false;
  run_ranks(
      3,
      [](Communicator& comm) {
        Tensor mine = testing::input(comm.rank(), 16, DType::Float32);
        Tensor theirs = Tensor::zeros({16});
        comm.send(mine, right_of(comm));  // returns at once: the message is a copy
        comm.recv(theirs, left_of(comm));
        EXPECT_EQ(theirs.to_vector(), testing::values(left_of(comm), 16))
            << "buffered send then recv must deliver the left neighbour's data";
      },
      options);
}

TEST(DistP2P, SendRecvRingPassesTheDataWithoutDeadlock) {
  for (int world = 2; world <= 5; ++world) {
    run_ranks(
        world,
        [&](Communicator& comm) {
          Tensor mine = testing::input(comm.rank(), 24, DType::Float32).reshape({4, 6});
          Tensor theirs = Tensor::zeros({4, 6});
          comm.send_recv(mine, right_of(comm), theirs, left_of(comm));
          EXPECT_EQ(theirs.to_vector(), testing::values(left_of(comm), 24))
              << "send_recv on rank " << comm.rank() << " of " << world
              << " must receive the left neighbour's tensor";
          const OpCounters c = comm.counters("send_recv");
          EXPECT_EQ(c.calls, 1);
          EXPECT_EQ(c.bytes_sent, 96) << "send_recv counts the bytes it sent";
          EXPECT_EQ(c.bytes_received, 96) << "send_recv counts the bytes it received";
        },
        testing::fast_options());
  }
}

TEST(DistP2P, IsendThenIrecvCompletesAtWait) {
  for (int world = 2; world <= 4; ++world) {
    run_ranks(
        world,
        [&](Communicator& comm) {
          Tensor mine = testing::input(comm.rank(), 10, DType::Int64);
          Tensor theirs = Tensor::zeros({10}, DType::Int64);
          Work sent = comm.isend(mine, right_of(comm));
          Work received = comm.irecv(theirs, left_of(comm));
          received.wait();
          sent.wait();
          EXPECT_TRUE(sent.completed() && received.completed())
              << "isend/irecv must be complete after wait()";
          EXPECT_EQ(theirs.to_vector(), testing::values(left_of(comm), 10))
              << "irecv on rank " << comm.rank() << " of " << world;
          EXPECT_EQ(comm.counters("send").bytes_sent, 80) << "isend counts as send";
          EXPECT_EQ(comm.counters("recv").bytes_received, 80) << "irecv counts as recv";
        },
        testing::fast_options());
  }
}

TEST(DistP2P, ReceiveOfAnotherShapeFailsOnBothSidesWithBothShapes) {
  std::mutex mutex;
  std::vector<std::string> errors(2);
  run_and_get_error(
      2,
      [&](Communicator& comm) {
        try {
          if (comm.rank() == 1) comm.send(Tensor::ones({32}), 0);
          if (comm.rank() == 0) comm.recv(Tensor::zeros({4, 8}), 1);
        } catch (const DistError& e) {
          std::lock_guard<std::mutex> lock(mutex);
          errors[comm.rank()] = e.what();
          throw;
        }
      },
      testing::fast_options(std::chrono::seconds(2)));
  EXPECT_THAT(errors[0], HasSubstr("recv from rank 1: expected float32 [4, 8], got float32 [32]"))
      << "the receiver must name the peer and both shapes";
  EXPECT_THAT(errors[1], HasSubstr("send to rank 0: rank 0 rejected the message"))
      << "the sender must learn that its message was rejected, not wait for the timeout";
}

}  // namespace
}  // namespace gtl::dist
