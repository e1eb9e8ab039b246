// TODOs 3 and 4: naive DDP (one all-reduce per gradient) and flat DDP (one over the flat gradient)
// train exactly like one process on the full batch, and communicate exactly as designed.
#include <gtest/gtest.h>

#include "data_parallel.h"
#include "equivalence.h"
#include "gtl/distributed/in_process.h"

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
  testing::expect_equivalent_to_single_process(naive(), "naive DDP");
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
  testing::expect_equivalent_to_single_process(flat(), "flat DDP");
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

}  // namespace
}  // namespace lab05
