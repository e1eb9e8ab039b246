// Failures must end a run with an error that names the rank and the collective, never hang.
// Every test runs with a short timeout, so even a regression to a hang ends in seconds.
#include <gmock/gmock.h>
#include <future>

#include <mutex>

#include "dist_test_util.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

using ::testing::HasSubstr;

std::string run_and_get_error(int world, const std::function<void(Communicator&)>& fn,
                              std::chrono::milliseconds timeout = std::chrono::seconds(2)) {
  try {
    run_ranks(world, fn, testing::fast_options(timeout));
  } catch (const DistError& e) {
    return e.what();
  }
  return "";
}

TEST(DistFault, ThrowingRankAbortsThePeersCollectives) {
  std::mutex mutex;
  std::vector<std::string> peer_errors;
  const std::string error = run_and_get_error(4, [&](Communicator& comm) {
    if (comm.rank() == 2) throw std::runtime_error("loss is NaN");
    try {
      comm.all_reduce(Tensor::ones({100}));
    } catch (const DistError& e) {
      std::lock_guard<std::mutex> lock(mutex);
      peer_errors.push_back(e.what());
      throw;
    }
  });
  EXPECT_THAT(error, HasSubstr("rank 2 of 4 failed: loss is NaN"))
      << "run_ranks must rethrow the first failure, naming its rank";
  // Ranks 0, 1 and 3 waited (directly or through a neighbour) on rank 2; each must have been
  // told, naming the collective and the failed rank.
  ASSERT_EQ(peer_errors.size(), 3u);
  for (const std::string& e : peer_errors) {
    EXPECT_THAT(e, HasSubstr("all_reduce aborted"));
    EXPECT_THAT(e, HasSubstr("rank 2 failed"));
  }
}

TEST(DistFault, RankThatSkipsACollectiveIsNamed) {
  const std::string error = run_and_get_error(3, [](Communicator& comm) {
    if (comm.rank() != 1) comm.barrier();
  });
  EXPECT_THAT(error, HasSubstr("barrier"));
  EXPECT_THAT(error, HasSubstr("rank 1"));
  EXPECT_THAT(error, HasSubstr("returned without taking part"));
}

TEST(DistFault, HungRankTimesOutWithTheCollectiveNamed) {
  std::promise<void> released;
  std::shared_future<void> release = released.get_future().share();
  const std::string error = run_and_get_error(
      2,
      [&](Communicator& comm) {
        if (comm.rank() == 1) {
          release.wait_for(std::chrono::seconds(10));  // "hangs" until rank 0 has given up
          return;
        }
        try {
          comm.all_gather(Tensor::ones({4}), Tensor::zeros({8}));
        } catch (...) {
          released.set_value();
          throw;
        }
      },
      std::chrono::milliseconds(300));
  EXPECT_THAT(error, HasSubstr("rank 0 of 2 failed"));
  EXPECT_THAT(error, HasSubstr("all_gather timed out after 0.3 s waiting for rank 1"));
}

TEST(DistFault, MismatchedCollectivesAreReported) {
  const std::string error = run_and_get_error(2, [](Communicator& comm) {
    if (comm.rank() == 0) comm.broadcast(Tensor::ones({4}), 0);
    if (comm.rank() == 1) comm.all_reduce(Tensor::ones({4}));
  });
  EXPECT_THAT(error, HasSubstr("in all_reduce, but rank 0 sent data for broadcast"));
}

TEST(DistFault, FailureInsideASplitGroupReachesTheWholeWorld) {
  const std::string error = run_and_get_error(4, [](Communicator& comm) {
    auto half = comm.split(comm.rank() / 2, comm.rank());
    if (comm.rank() == 3) throw std::runtime_error("out of data");
    half->all_reduce(Tensor::ones({8}));  // ranks 0, 1 finish this; rank 2 waits on rank 3
    comm.barrier();                       // ranks 0, 1 wait here on ranks 2 and 3
  });
  EXPECT_THAT(error, HasSubstr("rank 3 of 4 failed: out of data"));
}

}  // namespace
}  // namespace gtl::dist
