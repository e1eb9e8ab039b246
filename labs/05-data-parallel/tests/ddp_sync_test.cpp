// TODOs 3 and 4: naive DDP (one all-reduce per gradient) and flat DDP (one for all the gradients)
// train exactly like one process on the full batch, and communicate exactly as designed.
#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "data_parallel.h"
#include "equivalence.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl/distributed/in_process.h"
#include "gtl/train/trainer.h"
#include "gtl_test_seed.h"
#include "lab05_test_util.h"
#include "weighted_communicator.h"

namespace lab05 {
namespace {

SyncFactory naive() {
  return [](Communicator& comm, gtl::nn::Module&, gtl::nn::ParameterBuffer& buffer) {
    return [&comm, &buffer] { naive_ddp_sync(comm, buffer.params()); };
  };
}

SyncFactory flat() {
  return [](Communicator& comm, gtl::nn::Module&, gtl::nn::ParameterBuffer& buffer) {
    return [&comm, &buffer] { flat_ddp_sync(comm, buffer.params()); };
  };
}

// The gradients a sync leaves must be what its all-reduces returned: under a communicator whose
// all-reduce weighs rank r by w(r) = r + 1 (weighted_communicator.h), gradient element i of rank r
// set to testing::value(r + 5t, i), a sync over 4 ranks must leave sum_r w(r) g_r / 4 (exact).
void expect_what_the_collective_returned(
    const std::function<void(Communicator&, const std::vector<ParamRef>&)>& sync,
    const std::string& what) {
  constexpr int kWorld = 4;
  gtl::dist::run_ranks(
      kWorld,
      [&](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
        const std::vector<ParamRef> params = buffer.params();
        for (std::size_t t = 0; t < params.size(); ++t) {
          const int shift = 5 * static_cast<int>(t);
          Tensor(params[t].grad)
              .copy_(
                  Tensor::from_vector(testing::values(comm.rank() + shift, params[t].grad.numel()),
                                      params[t].grad.shape()));
        }
        testing::WeightedAllReduce weighted(comm);
        sync(weighted, params);
        for (std::size_t t = 0; t < params.size(); ++t) {
          const int shift = 5 * static_cast<int>(t);
          const int64_t n = params[t].grad.numel();
          std::vector<float> expected(static_cast<std::size_t>(n), 0.0f);
          for (int r = 0; r < kWorld; ++r) {
            for (int64_t i = 0; i < n; ++i) {
              expected[std::size_t(i)] +=
                  testing::WeightedAllReduce::weight(r) * testing::value(r + shift, i);
            }
          }
          for (float& x : expected) x /= kWorld;
          EXPECT_EQ(testing::bitwise_diff(params[t].grad.to_vector(), expected), "")
              << what << ", rank " << comm.rank() << ", " << params[t].name << ": this test's "
              << "all-reduce weighs rank r by r + 1, so the synced gradient must be "
              << "sum_r (r + 1) g_r / 4, what the collective returned over the world size. A "
              << "gradient made any other way (from other ranks' tensors, from a copy taken "
              << "before the all-reduce) is not the sync: revisit where the result of each "
              << "all-reduce goes";
        }
      },
      testing::fast());
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

TEST(NaiveDdp, EachGradientIsWhatItsAllReduceReturned) {
  expect_what_the_collective_returned(
      [](Communicator& comm, const std::vector<ParamRef>& params) { naive_ddp_sync(comm, params); },
      "naive DDP");
}

// float16 gradients (a loss-scaled mixed-precision model keeps them large on purpose) whose
// average over 4 ranks is representable while their sum is not: rank r's element i of gradient t
// is 2048 * (8 + (i + t + r) % 8), from 16384 to 30720, so every sum of the four ranks' passes
// float16's largest value, 65504. The average is a multiple of 512 in [16384, 30720], exact in
// float16, and so is every partial sum of the gradients first divided by 2 or by 4. Shapes from
// the grading seed.
float half_grad(int rank, std::size_t t, int64_t i) {
  return 2048.0f * static_cast<float>(8 + (i + static_cast<int64_t>(t) + rank) % 8);
}

TEST(NaiveDdp, Float16GradientsAverageWithoutOverflow) {
  constexpr int kWorld = 4;
  std::mt19937_64 g = gtl::test_seed::generator("NaiveDdp.Float16");
  std::vector<gtl::Shape> shapes;
  for (int t = 0; t < 3; ++t) {
    shapes.push_back(t == 1
                         ? gtl::Shape{gtl::test_seed::draw(g, 1, 6), gtl::test_seed::draw(g, 1, 9)}
                         : gtl::Shape{gtl::test_seed::draw(g, 1, 40)});
  }
  gtl::dist::run_ranks(
      kWorld,
      [&](Communicator& comm) {
        std::vector<ParamRef> params;
        for (std::size_t t = 0; t < shapes.size(); ++t) {
          const int64_t n = gtl::shape_numel(shapes[t]);
          std::vector<float> grad(static_cast<std::size_t>(n));
          for (int64_t i = 0; i < n; ++i) grad[std::size_t(i)] = half_grad(comm.rank(), t, i);
          std::string name = "h";
          name += std::to_string(t);
          params.push_back(ParamRef{Tensor::zeros(shapes[t], gtl::DType::Float16),
                                    Tensor::from_vector(grad, shapes[t], gtl::DType::Float16),
                                    Tensor(), name});
        }
        naive_ddp_sync(comm, params);
        const auto reduces = comm.trace()->events("all_reduce");
        ASSERT_EQ(reduces.size(), params.size()) << "naive DDP: one all-reduce per parameter ("
                                                 << params.size() << "), got " << reduces.size();
        for (std::size_t t = 0; t < params.size(); ++t) {
          EXPECT_EQ(reduces[t].bytes, int64_t(params[t].grad.nbytes()))
              << "float16 gradient " << t << ": its all-reduce must carry its own "
              << params[t].grad.nbytes() << " bytes, got " << reduces[t].bytes
              << ": a float16 gradient travels as float16 (half of float32's bytes is the point "
              << "of keeping it in float16)";
          const int64_t n = params[t].grad.numel();
          std::vector<float> expected(static_cast<std::size_t>(n), 0.0f);
          for (int64_t i = 0; i < n; ++i) {
            for (int r = 0; r < kWorld; ++r) expected[std::size_t(i)] += half_grad(r, t, i);
            expected[std::size_t(i)] /= kWorld;
          }
          EXPECT_EQ(testing::bitwise_diff(params[t].grad.to_vector(), expected), "")
              << "rank " << comm.rank() << ", float16 gradient " << t << " ("
              << gtl::test_seed::describe() << "): expected the average over the " << kWorld
              << " ranks (every element between 16384 and 30720, exact in float16), while the sum "
              << "over ranks passes float16's 65504. An inf means a value on its way passed "
              << "65504 (TODO 3, float16)";
        }
      },
      testing::fast());
}

TEST(FlatDdp, TrainsLikeOneProcessOnTheFullBatch) {
  testing::expect_equivalent_to_single_process(flat(), "flat DDP",
                                               "FlatDdp.TrainsLikeOneProcessOnTheFullBatch");
}

// Gradients as separate tensors (no ParameterBuffer), of sizes drawn from the grading seed, and the
// lab model's (views of its ParameterBuffer, whose slots have padding between them). Rank r's
// element i of gradient t is 3 * ((i + t) % 5) + r - 1: the three ranks' sum is a multiple of 3,
// so the average is exact.
float flat_grad(int rank, std::size_t t, int64_t i) {
  return static_cast<float>(3 * ((i + static_cast<int64_t>(t)) % 5) + rank - 1);
}

std::vector<gtl::Shape> seeded_grad_shapes() {
  std::mt19937_64 g = gtl::test_seed::generator("FlatDdp.Shapes");
  std::vector<gtl::Shape> shapes;
  for (int t = 0; t < 5; ++t) {
    shapes.push_back(t % 2 == 0
                         ? gtl::Shape{gtl::test_seed::draw(g, 1, 9), gtl::test_seed::draw(g, 1, 9)}
                         : gtl::Shape{gtl::test_seed::draw(g, 1, 70)});
  }
  return shapes;
}

void expect_one_fused_average(Communicator& comm, const std::vector<ParamRef>& params,
                              const std::string& what) {
  int64_t grad_bytes = 0;
  for (std::size_t t = 0; t < params.size(); ++t) {
    const int64_t n = params[t].grad.numel();
    std::vector<float> g(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) g[std::size_t(i)] = flat_grad(comm.rank(), t, i);
    Tensor(params[t].grad).copy_(Tensor::from_vector(g, params[t].grad.shape()));
    grad_bytes += int64_t(params[t].grad.nbytes());
  }
  flat_ddp_sync(comm, params);
  const auto reduces = comm.trace()->events("all_reduce");
  ASSERT_EQ(reduces.size(), 1u) << what << ": flat DDP makes ONE all-reduce per call, got "
                                << reduces.size() << ": revisit what one collective can carry";
  EXPECT_EQ(reduces[0].bytes, grad_bytes)
      << what << ": the one all-reduce must carry exactly the " << params.size()
      << " gradients' bytes (" << grad_bytes << "), got " << reduces[0].bytes;
  EXPECT_EQ(comm.total_counters().calls, 1) << what << ": flat DDP makes no other call";
  for (std::size_t t = 0; t < params.size(); ++t) {
    const int64_t n = params[t].grad.numel();
    std::vector<float> expected(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) expected[std::size_t(i)] = flat_grad(1, t, i);  // the mean
    EXPECT_EQ(testing::bitwise_diff(params[t].grad.to_vector(), expected), "")
        << what << ", rank " << comm.rank() << ", gradient " << t << " (" << params[t].name
        << "): expected its average over the 3 ranks, in place. Revisit how each gradient gets "
        << "into the one all-reduce and back";
  }
}

TEST(FlatDdp, OneAllReduceOfAllTheGradients) {
  const std::vector<gtl::Shape> shapes = seeded_grad_shapes();
  gtl::dist::run_ranks(
      3,
      [&](Communicator& comm) {
        std::vector<ParamRef> params;
        for (std::size_t t = 0; t < shapes.size(); ++t) {
          std::string name = "g";
          name += std::to_string(t);
          params.push_back(
              ParamRef{Tensor::zeros(shapes[t]), Tensor::zeros(shapes[t]), Tensor(), name});
        }
        expect_one_fused_average(comm, params, "separate gradient tensors");
      },
      testing::fast());
  gtl::dist::run_ranks(
      3,
      [](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        gtl::nn::ParameterBuffer buffer(*model, gtl::Device::cpu());
        expect_one_fused_average(comm, buffer.params(), "the lab model's ParameterBuffer");
      },
      testing::fast());
}

TEST(FlatDdp, EachGradientIsWhatTheAllReduceReturned) {
  expect_what_the_collective_returned(
      [](Communicator& comm, const std::vector<ParamRef>& params) { flat_ddp_sync(comm, params); },
      "flat DDP");
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
        o.grad_sync = [&comm](gtl::nn::ParameterBuffer& b) { flat_ddp_sync(comm, b.params()); };
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
