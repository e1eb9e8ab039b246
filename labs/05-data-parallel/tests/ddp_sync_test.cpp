// TODOs 3 and 4: naive DDP (one all-reduce per gradient) and flat DDP (one over the flat gradient)
// train exactly like one process on the full batch, and communicate exactly as designed.
#include <gtest/gtest.h>

#include "data_parallel.h"
#include "equivalence.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl/distributed/in_process.h"
#include "gtl/train/trainer.h"

namespace lab05 {
namespace {

SyncFactory naive() {
  return [](Communicator& comm, gtl::nn::Module&, gtl::nn::ParameterBuffer& buffer) {
    return [&comm, &buffer] { naive_ddp_sync(comm, buffer.params()); };
  };
}

SyncFactory flat() {
  return [](Communicator& comm, gtl::nn::Module&, gtl::nn::ParameterBuffer& buffer) {
    return [&comm, &buffer] { flat_ddp_sync(comm, buffer); };
  };
}

TEST(NaiveDdp, TrainsLikeOneProcessOnTheFullBatch) {
  testing::expect_equivalent_to_single_process(naive(), "naive DDP",
                                               "NaiveDdp.TrainsLikeOneProcessOnTheFullBatch");
}

TEST(NaiveDdp, AllReducesEveryGradientOnceInParameterOrder) {
  gtl::dist::run_ranks(
      3,
      [](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
        const std::vector<ParamRef> params = buffer.params();
        naive_ddp_sync(comm, params);
        const auto reduces = comm.trace()->events("all_reduce");
        ASSERT_EQ(reduces.size(), params.size()) << "naive DDP: one all-reduce per parameter ("
                                                 << params.size() << "), got " << reduces.size();
        for (std::size_t i = 0; i < params.size(); ++i) {
          EXPECT_EQ(reduces[i].bytes, int64_t(params[i].grad.nbytes()))
              << "all-reduce " << i << " must carry " << params[i].name << "'s gradient";
        }
        EXPECT_EQ(comm.total_counters().calls, int64_t(params.size()))
            << "naive DDP makes no other call than the all-reduces";
      },
      testing::fast());
}

TEST(FlatDdp, TrainsLikeOneProcessOnTheFullBatch) {
  testing::expect_equivalent_to_single_process(flat(), "flat DDP",
                                               "FlatDdp.TrainsLikeOneProcessOnTheFullBatch");
}

TEST(FlatDdp, OneAllReduceOfTheWholeFlatGradient) {
  gtl::dist::run_ranks(
      3,
      [](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
        flat_ddp_sync(comm, buffer);
        const gtl::dist::OpCounters c = comm.counters("all_reduce");
        EXPECT_EQ(c.calls, 1) << "flat DDP: ONE all-reduce per step, got " << c.calls;
        const auto reduces = comm.trace()->events("all_reduce");
        ASSERT_EQ(reduces.size(), 1u);
        EXPECT_EQ(reduces[0].bytes, int64_t(buffer.grads().nbytes()))
            << "the one all-reduce carries the whole flat gradient (" << buffer.grads().nbytes()
            << " bytes)";
        EXPECT_EQ(comm.total_counters().calls, 1) << "flat DDP makes no other call";
      },
      testing::fast());
}

// The core's seam: TrainerOptions::grad_sync. Two ranks train the lab model on their shards of
// SyntheticDigits with your flat DDP as the trainer's sync; they stay identical and learn.
TEST(FlatDdp, PlugsIntoTheTrainerAndTrains) {
  constexpr int kWorld = 2, kSteps = 30;
  std::vector<std::vector<float>> weights(kWorld), losses(kWorld);
  gtl::dist::run_ranks(
      kWorld,
      [&](Communicator& comm) {
        gtl::train::TrainerOptions o;
        o.model = lab_model();
        o.batch_size = 32;  // global: 16 per rank
        o.rank = comm.rank();
        o.world_size = comm.world_size();
        o.grad_sync = [&comm](gtl::nn::ParameterBuffer& b) { flat_ddp_sync(comm, b); };
        gtl::train::Trainer trainer(o, std::make_shared<gtl::data::SyntheticDigits>(512));
        for (int i = 0; i < kSteps; ++i) losses[comm.rank()].push_back(trainer.step().loss);
        weights[comm.rank()] = trainer.parameters().values().to_vector();
      },
      testing::fast());
  EXPECT_EQ(testing::bitwise_diff(weights[1], weights[0]), "")
      << "after " << kSteps << " steps both ranks must hold the same weights: the trainer steps "
      << "on the gradient your grad_sync left, so it must be the same on every rank";
  auto mean = [&](int from, int to) {
    double sum = 0;
    for (int r = 0; r < kWorld; ++r) {
      for (int i = from; i < to; ++i) sum += losses[r][i];
    }
    return sum / (kWorld * (to - from));
  };
  EXPECT_LT(mean(kSteps - 5, kSteps), 0.8 * mean(0, 5))
      << "the mean loss of the last 5 steps must be well below that of the first 5: the model "
      << "must learn with your DDP plugged into the trainer";
}

}  // namespace
}  // namespace lab05
