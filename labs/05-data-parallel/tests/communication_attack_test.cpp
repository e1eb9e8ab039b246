// In-process ranks are threads of one address space, so a communication TODO
// can produce the right numbers without communicating, by reading another rank's memory through a
// global. These tests run such attacks (written here, not a student's files) against the very
// assertions the graded checks make (lab05_test_util.h's traffic helpers) and prove that the
// numbers alone would pass while the traffic check fails them:
//   ring-all-reduce    a "ring" that sums every rank's input read through a global, no send_recv
//   broadcast-weights  a "broadcast" that copies the root's weights through a global
//   naive-ddp, flat-ddp, bucketed-ddp  a sync that averages the gradients through a global
// They run in-process, not through gtl-grade on a copy of the course: grading a replaced file
// rebuilds the whole lab twice (about 20 minutes on 2 cores), while the check's verdict is exactly
// these assertions. No rubric check selects this suite: it grades no student code.
#include <gtest/gtest.h>

#include <barrier>
#include <condition_variable>
#include <mutex>

#include "data_parallel.h"
#include "ddp_training.h"
#include "equivalence.h"
#include "gtl/nn/models.h"
#include "lab05_cases.h"
#include "lab05_test_util.h"

namespace lab05 {
namespace {

// The attacker's shared memory: every rank posts a copy of its data, then waits until all have
// (a mutex and a condition variable: no call of the communicator, so no counter moves).
class Board {
 public:
  explicit Board(int world) : posted_(static_cast<std::size_t>(world)) {}
  void post(int rank, std::vector<float> data) {
    std::unique_lock<std::mutex> lock(mutex_);
    posted_[static_cast<std::size_t>(rank)] = std::move(data);
    if (++count_ == static_cast<int>(posted_.size())) all_.notify_all();
    all_.wait(lock, [&] { return count_ == static_cast<int>(posted_.size()); });
  }
  const std::vector<float>& of(int rank) const { return posted_[static_cast<std::size_t>(rank)]; }

 private:
  std::mutex mutex_;
  std::condition_variable all_;
  int count_ = 0;
  std::vector<std::vector<float>> posted_;
};

// The attack on TODO 1: the element-wise sum of every rank's input, read from the board.
void ring_all_reduce_through_a_global(Communicator& comm, const Tensor& tensor, Board& board) {
  board.post(comm.rank(), tensor.to_vector());
  std::vector<float> sum = board.of(0);
  for (int r = 1; r < comm.world_size(); ++r)
    for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += board.of(r)[i];
  Tensor out = tensor;  // a handle to the same storage
  out.copy_(Tensor::from_vector(sum, tensor.shape()));
}

TEST(GlobalSharingAttack, ARingThatSumsThroughAGlobalHasTheRightNumbersAndFailsTheTrafficCheck) {
  for (int world : {2, 3, 4}) {
    const int64_t n = 13;
    Board board(world);
    gtl::dist::run_ranks(
        world,
        [&](Communicator& comm) {
          Tensor t = Tensor::from_vector(testing::values(comm.rank(), n), {n});
          ring_all_reduce_through_a_global(comm, t, board);
          EXPECT_EQ(testing::bitwise_diff(t.to_vector(), testing::summed(world, n)), "")
              << "N = " << world
              << ": the attack must pass the numeric check, or it proves nothing";
          const std::string problem = testing::ring_traffic_problem(comm, n);
          EXPECT_NE(problem.find("expected " + std::to_string(2 * (world - 1)) + " send_recv"),
                    std::string::npos)
              << "N = " << world << ", rank " << comm.rank() << ": the ring check must reject "
              << "a sum read through memory, got '" << problem << "'";
        },
        testing::fast());
  }
}

TEST(GlobalSharingAttack, ABroadcastThroughAGlobalHasTheRightWeightsAndFailsTheTrafficCheck) {
  const uint64_t base = 1234;
  for (int root : {0, 2}) {
    Board board(3);
    gtl::dist::run_ranks(
        3,
        [&](Communicator& comm) {
          gtl::nn::ModelConfig config = lab_model();
          config.seed = base + static_cast<uint64_t>(comm.rank());
          auto model = gtl::nn::make_model(config);
          std::vector<float> mine;
          int64_t param_bytes = 0;
          for (const ParamRef& p : model->parameters()) {
            const std::vector<float> v = p.value.to_vector();
            mine.insert(mine.end(), v.begin(), v.end());
            param_bytes += int64_t(p.value.nbytes());
          }
          board.post(comm.rank(), mine);  // the attack: every rank copies the root's weights
          std::size_t at = 0;
          for (const ParamRef& p : model->parameters()) {
            const auto first = board.of(root).begin() + static_cast<std::ptrdiff_t>(at);
            at += static_cast<std::size_t>(p.value.numel());
            Tensor value = p.value;
            value.copy_(Tensor::from_vector(
                {first, board.of(root).begin() + static_cast<std::ptrdiff_t>(at)},
                p.value.shape()));
          }
          std::vector<float> got;
          for (const ParamRef& p : model->parameters()) {
            const std::vector<float> v = p.value.to_vector();
            got.insert(got.end(), v.begin(), v.end());
          }
          EXPECT_EQ(testing::bitwise_diff(got, lab05_cases::initial_weights(base + uint64_t(root))),
                    "")
              << "the attack must hold the root's weights, or it proves nothing";
          const std::string problem = testing::broadcast_traffic_problem(comm, root, param_bytes);
          if (comm.rank() == root) {
            EXPECT_EQ(problem, "") << "the root receives nothing either way";
          } else {
            EXPECT_NE(problem.find("expected to receive " + std::to_string(param_bytes)),
                      std::string::npos)
                << "rank " << comm.rank() << ": the broadcast check must reject weights copied "
                << "through memory, got '" << problem << "'";
          }
        },
        testing::fast());
  }
}

// The attack on TODOs 3 to 5: a DDP sync that averages the flat gradient through shared memory
// (every rank posts its gradient, a std::barrier, the average in rank order, a barrier before
// anyone posts again): the weights of single-process training, and no all-reduce at all.
TEST(GlobalSharingAttack, ADdpSyncThatAveragesThroughAGlobalTrainsRightAndFailsTheTrafficCheck) {
  const int world = 3;
  const TrainConfig config;
  std::vector<std::vector<float>> posted(world);
  std::barrier step_barrier(world);
  const SyncFactory through_a_global = [&](Communicator& comm, gtl::nn::Module&,
                                           gtl::nn::ParameterBuffer& buffer) {
    return [&comm, &buffer, &posted, &step_barrier] {
      posted[static_cast<std::size_t>(comm.rank())] = buffer.grads().to_vector();
      step_barrier.arrive_and_wait();
      std::vector<float> avg = posted[0];
      for (int r = 1; r < world; ++r)
        for (std::size_t i = 0; i < avg.size(); ++i) avg[i] += posted[std::size_t(r)][i];
      for (float& v : avg) v /= float(world);
      step_barrier.arrive_and_wait();
      Tensor grads = buffer.grads();
      grads.copy_(Tensor::from_vector(avg, grads.shape()));
    };
  };
  const TrainResult ref = train_single_process(world, config);
  gtl::dist::run_ranks(
      world,
      [&](Communicator& comm) {
        const TrainResult got = train_lab_model(comm, config, through_a_global);
        EXPECT_EQ(testing::bitwise_diff(got.weights, ref.weights), "")
            << "rank " << comm.rank() << ": the attack must train like one process, or it proves "
            << "nothing";
        const std::string problem = testing::ddp_traffic_problem(comm, config, "the attack");
        EXPECT_NE(problem.find("expected at least"), std::string::npos)
            << "rank " << comm.rank() << ": the DDP checks must reject gradients averaged through "
            << "memory, got '" << problem << "'";
      },
      testing::fast(/*deterministic=*/true));
}

}  // namespace
}  // namespace lab05
