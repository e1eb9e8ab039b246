// TODO 1: the ring all-reduce written from send_recv. Values are small integers, so the sum is
// exact in any order and the result is compared bit for bit; the traffic is compared with the
// ring's formula to the byte, from the communicator's counters and trace.
#include <gtest/gtest.h>

#include <mutex>

#include "data_parallel.h"
#include "gtl_judge_output.h"
#include "lab05_cases.h"
#include "lab05_student_call.h"
#include "lab05_test_util.h"

namespace lab05 {
namespace {

using gtl::dist::run_ranks;
using gtl::dist::TraceKind;
using testing::fast;

// The student's ring inside TODO 1's guard scope (lab05_student_call.h): the core's collectives
// refuse to run until it returns. Nothing after it in these tests calls one.
void student_ring(Communicator& comm, const Tensor& t) {
  const auto call = lab05_student_call::todo1();
  ring_all_reduce(comm, t);
}

struct Case {
  int world;
  int64_t n;
};

// Sizes divisible by N, not divisible, smaller than N, and a single element.
const Case kCases[] = {{1, 5}, {2, 8}, {2, 7}, {3, 12}, {3, 10}, {4, 13}, {4, 3}, {5, 1}, {3, 100}};

TEST(RingAllReduce, EveryRankGetsTheExactSumForAnyRankCountAndSize) {
  for (const Case& c : kCases) {
    std::vector<std::vector<float>> got(c.world);
    run_ranks(
        c.world,
        [&](Communicator& comm) {
          Tensor t = Tensor::from_vector(testing::values(comm.rank(), c.n), {c.n});
          student_ring(comm, t);
          got[comm.rank()] = t.to_vector();
        },
        fast());
    const std::vector<float> expected = testing::summed(c.world, c.n);
    for (int r = 0; r < c.world; ++r) {
      EXPECT_EQ(testing::bitwise_diff(got[r], expected), "")
          << "ring_all_reduce, N = " << c.world << " ranks, n = " << c.n << " elements, rank " << r
          << ": every rank must end with the element-wise sum of all ranks' inputs. Revisit your "
          << "table of which chunk each rank sends and receives at each step of the two phases "
          << "(does every chunk pass through every rank once per phase?) and the zero padding "
          << "when N does not divide n";
    }
  }
}

// World sizes, sizes and values drawn from the grading seed; every rank's result goes to the judge.
TEST(RingAllReduce, SeededWorldsSizesAndValues) {
  gtl::judge::Outputs recorded("RingAllReduce.SeededWorldsSizesAndValues");
  for (const lab05_cases::RingCase& c : lab05_cases::seeded_ring_cases()) {
    std::vector<std::vector<float>> got(c.world);
    run_ranks(
        c.world,
        [&](Communicator& comm) {
          Tensor t = Tensor::from_vector(lab05_cases::ring_input(c, comm.rank()), {c.n});
          student_ring(comm, t);
          got[comm.rank()] = t.to_vector();
        },
        fast());
    const std::vector<float> expected = lab05_cases::ring_sum(c);
    for (int r = 0; r < c.world; ++r) {
      recorded.record_digest(got[r].data(), got[r].size());
      EXPECT_EQ(testing::bitwise_diff(got[r], expected), "")
          << "ring_all_reduce, N = " << c.world << " ranks, n = " << c.n << " elements, rank " << r
          << " (" << gtl::test_seed::describe() << "): every rank must end with the element-wise "
          << "sum of all ranks' inputs";
    }
  }
}

TEST(RingAllReduce, KeepsTheTensorsShape) {
  run_ranks(
      3,
      [&](Communicator& comm) {
        Tensor t = Tensor::from_vector(testing::values(comm.rank(), 10), {2, 5});
        student_ring(comm, t);
        EXPECT_EQ(t.shape(), (gtl::Shape{2, 5})) << "the all-reduce works in place";
        EXPECT_EQ(testing::bitwise_diff(t.to_vector(), testing::summed(3, 10)), "")
            << "a [2, 5] tensor is reduced as its 10 elements";
      },
      fast());
}

// 2(N-1) send_recv steps of ceil(n/N) floats each way per rank (lab05_test_util.h derives the
// figure); a ring that shares its sums through memory instead fails here
// (communication_attack_test.cpp).
TEST(RingAllReduce, SendsExactlyTwoNMinusOneOverNOfThePaddedBufferInOneSendRecvPerStep) {
  for (const Case& c : kCases) {
    if (c.world == 1) continue;
    run_ranks(
        c.world,
        [&](Communicator& comm) {
          Tensor t = Tensor::from_vector(testing::values(comm.rank(), c.n), {c.n});
          student_ring(comm, t);
          EXPECT_EQ(testing::ring_traffic_problem(comm, c.n), "");
        },
        fast());
  }
}

TEST(RingAllReduce, EachRankSendsToItsRightNeighbourAndReceivesFromItsLeft) {
  const int world = 4;
  run_ranks(
      world,
      [&](Communicator& comm) {
        Tensor t = Tensor::from_vector(testing::values(comm.rank(), 20), {20});
        student_ring(comm, t);
        const int next = (comm.rank() + 1) % world, prev = (comm.rank() + world - 1) % world;
        const auto messages = comm.trace()->events(TraceKind::PointToPoint);
        ASSERT_EQ(messages.size(), std::size_t(2 * (world - 1)))
            << "rank " << comm.rank() << ": 2(N-1) ring steps of point-to-point messages";
        for (const gtl::dist::TraceEvent& e : messages) {
          EXPECT_EQ(e.peers, (std::vector<int>{next, prev}))
              << "rank " << comm.rank() << ", event " << e.seq << " (" << e.op
              << "): a ring step sends to r+1 and receives from r-1";
        }
      },
      fast());
}

// Why send_recv: the same ring step written "every rank sends, then every rank receives" deadlocks
// with rendezvous sends (NCCL, large MPI messages, the in-process default). The timeout turns the
// hang into an error that says so.
TEST(RingAllReduce, SendThenReceiveDeadlocksAndTheTimeoutReportsIt) {
  gtl::dist::RunOptions options = fast();
  options.timeout = std::chrono::milliseconds(300);
  std::string message;
  try {
    run_ranks(
        3,
        [](Communicator& comm) {
          Tensor out = Tensor::ones({4}), in = Tensor::zeros({4});
          comm.send(out, (comm.rank() + 1) % 3);  // everybody sends first ...
          comm.recv(in, (comm.rank() + 2) % 3);   // ... nobody is receiving
        },
        options);
  } catch (const gtl::dist::DistError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("deadlock"), std::string::npos)
      << "a ring of blocking sends must fail with a deadlock report, got: '" << message << "'";
}

}  // namespace
}  // namespace lab05
