// Asynchronous collectives on CPU tensors really run in the background (on the communicator's
// progress thread, progress_queue.h): a rank blocks only in Work::wait(). A communicator's
// operations still run in issue order, a failure surfaces in wait(), and a world destroyed with
// operations pending neither hangs nor leaks.
#include <chrono>
#include <future>
#include <mutex>

#include "dist_test_util.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

TEST(DistAsync, RankBlocksOnlyInWait) {
  // Rank 1 joins the all-reduce only after rank 0 has come back from all_reduce_async: if the
  // call blocked until the collective was done, rank 0 would never come back (a timeout).
  std::promise<void> issued;
  std::shared_future<void> rank0_issued = issued.get_future().share();
  run_ranks(
      2,
      [&](Communicator& comm) {
        Tensor t = testing::input(comm.rank(), 1000, DType::Float32);
        if (comm.rank() == 1) {
          ASSERT_EQ(rank0_issued.wait_for(std::chrono::seconds(5)), std::future_status::ready)
              << "all_reduce_async on rank 0 did not return before its peer joined: it is not "
                 "asynchronous";
        }
        Work w = comm.all_reduce_async(t);
        if (comm.rank() == 0) {
          EXPECT_FALSE(w.completed()) << "rank 1 has not joined yet; the work cannot be done";
          issued.set_value();  // "host work" while the collective is pending
        }
        w.wait();
        EXPECT_TRUE(w.completed());
        EXPECT_EQ(t.to_vector(), testing::reduced(2, 1000, DType::Float32, ReduceOp::Sum));
      },
      testing::fast_options());
}

TEST(DistAsync, OneThreadCanDriveTwoRanksWithAsyncCalls) {
  // Only possible when the calls return before the collective is done.
  auto world = make_in_process_world(2, testing::fast_options());
  Tensor a = testing::input(0, 64, DType::Float32), b = testing::input(1, 64, DType::Float32);
  Work wa = world[0]->all_reduce_async(a);
  Work wb = world[1]->all_reduce_async(b);
  wa.wait();
  wb.wait();
  EXPECT_EQ(a.to_vector(), testing::reduced(2, 64, DType::Float32, ReduceOp::Sum));
  EXPECT_EQ(b.to_vector(), a.to_vector());
}

TEST(DistAsync, OperationsRunInIssueOrder) {
  // sum then max differs from max then sum: t_r = r gives sum = N(N-1)/2 everywhere, and its
  // max is the same; the other order gives max N-1, then sum N(N-1).
  for (int world = 2; world <= 4; ++world) {
    run_ranks(
        world,
        [&](Communicator& comm) {
          Tensor t = Tensor::full({8}, static_cast<float>(comm.rank()));
          Work sum = comm.all_reduce_async(t, ReduceOp::Sum);
          Work max = comm.all_reduce_async(t, ReduceOp::Max);
          Tensor root = Tensor::full({3}, static_cast<float>(comm.rank()));
          comm.broadcast(root, 0);  // synchronous: runs after both
          EXPECT_TRUE(sum.completed() && max.completed())
              << "a synchronous call must run after the async calls issued before it";
          max.wait();
          sum.wait();
          const float expected = world * (world - 1) / 2.0f;
          EXPECT_EQ(t.to_vector(), std::vector<float>(8, expected))
              << "rank " << comm.rank() << " of " << world
              << ": the progress thread must run a communicator's operations in issue order";
          EXPECT_EQ(root.to_vector(), std::vector<float>(3, 0.0f));
        },
        testing::fast_options());
  }
}

TEST(DistAsync, FailureOfTheOperationIsRethrownByWait) {
  std::mutex mutex;
  std::string error;
  bool issued = false;
  try {
    run_ranks(
        2,
        [&](Communicator& comm) {
          if (comm.rank() == 1) throw std::runtime_error("no data");
          Work w = comm.all_reduce_async(Tensor::ones({4}));
          {
            std::lock_guard<std::mutex> lock(mutex);
            issued = true;  // the call itself did not throw
          }
          try {
            w.wait();
          } catch (const DistError& e) {
            std::lock_guard<std::mutex> lock(mutex);
            error = e.what();
          }
        },
        testing::fast_options(std::chrono::seconds(2)));
  } catch (const DistError&) {
  }
  EXPECT_TRUE(issued);
  EXPECT_NE(error.find("all_reduce aborted: rank 1 failed: no data"), std::string::npos)
      << "Work::wait() must rethrow the collective's failure; got: '" << error << "'";
}

TEST(DistAsync, DestroyingAWorldWithPendingWorkEndsAtTheTimeout) {
  Work pending;
  const auto start = std::chrono::steady_clock::now();
  {
    auto world = make_in_process_world(2, testing::fast_options(std::chrono::milliseconds(200)));
    pending = world[0]->all_reduce_async(Tensor::ones({4}));  // rank 1 never joins
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << "the destructor must not wait for a peer that never comes";
  EXPECT_TRUE(pending.completed());
  try {
    pending.wait();
    ADD_FAILURE() << "the abandoned all_reduce cannot have succeeded";
  } catch (const DistError& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce timed out after 0.2 s"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace gtl::dist
