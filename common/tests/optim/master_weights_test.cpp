// Float32 master weights: small updates that vanish when the weights are stored in fp16
// accumulate in the master, and the fp16 compute copy is always the rounded master.
#include "gtl/optim/master_weights.h"

#include "gtl/optim/adamw.h"
#include "gtl/optim/sgd.h"
#include "optim_test_util.h"

namespace gtl::testing {
namespace {

// fp16 near 1 has a spacing of 2^-10 ~ 9.8e-4 above and 2^-11 below: 1 - 1e-4 rounds back to 1.
TEST(MasterWeights, SmallUpdatesVanishInPureFp16) {
  EXPECT_EQ(static_cast<float>(half(1.f - 1e-4f)), 1.f)
      << "the premise: 1 - 1e-4 is not representable in fp16";
  optim::ParamRef p{Tensor::ones({4}, DType::Float16), Tensor::full({4}, 1e-3, DType::Float16)};
  optim::Sgd sgd({p}, {0.1f, 0.f, 0.f, false});  // each step asks for p -= 1e-4
  for (int i = 0; i < 100; ++i) sgd.step();
  EXPECT_TRUE(compare(p.value.to_vector(), std::vector<float>(4, 1.f), {0, 0}).empty())
      << "stepping fp16 weights directly: each 1e-4 update rounds away, so 100 of them leave "
         "the weights at exactly 1 (got "
      << p.value.str() << ")";
}

TEST(MasterWeights, SmallUpdatesAccumulateInMaster) {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    optim::ParamRef model{Tensor::ones({4}, dtype), Tensor::full({4}, 1e-3, dtype), {}, "w"};
    optim::MasterWeights master({model});
    optim::Sgd sgd(master.params(), {0.1f, 0.f, 0.f, false});
    for (int i = 0; i < 100; ++i) {
      master.grads_to_master();
      sgd.step();
    }
    // 100 updates of 0.1 * float(half(1e-3)) each, accumulated in float32.
    const float g = Tensor::full({1}, 1e-3, dtype).to_vector()[0];
    const float expected_master = 1.f - 100 * 0.1f * g;
    const std::string err = compare(master.params()[0].value.to_vector(),
                                    std::vector<float>(4, expected_master), {1e-5, 0});
    EXPECT_TRUE(err.empty()) << dtype_name(dtype)
                             << ": the float32 master must accumulate every small update: " << err;
    const float rounded = Tensor::full({1}, expected_master, dtype).to_vector()[0];
    EXPECT_LT(rounded, 1.f) << "premise: 100 accumulated updates are visible in "
                            << dtype_name(dtype);
    expect_bitwise_equal(model.value, master.params()[0].value.to(dtype),
                         std::string(dtype_name(dtype)) +
                             " compute copy must be the master rounded to half after each step");
  }
}

// With AdamW and random data: after every step the fused update leaves compute == round(master).
TEST(MasterWeights, FusedComputeCopyIsRoundedMaster) {
  for (DType dtype : {DType::Float16, DType::BFloat16}) {
    Generator gen(3);
    auto model = make_params(gen, dtype);
    optim::MasterWeights master(model);
    optim::AdamW adamw(master.params(), {1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f});
    for (int step = 0; step < 3; ++step) {
      fill_grads(model, gen);
      master.grads_to_master();
      expect_bitwise_equal(master.params()[2].grad, model[2].grad.to(DType::Float32),
                           "grads_to_master: an exact widening of the half gradient");
      adamw.step();
      for (std::size_t k = 0; k < model.size(); ++k) {
        expect_bitwise_equal(model[k].value, master.params()[k].value.to(dtype),
                             std::string(dtype_name(dtype)) + " " + model[k].name +
                                 ": compute copy vs rounded master");
      }
    }
  }
}

TEST(MasterWeights, Float32ParametersArePassedThrough) {
  optim::ParamRef p{Tensor::ones({3}), Tensor::zeros({3}), {}, "norm"};
  optim::MasterWeights master({p});
  EXPECT_EQ(master.params()[0].value.data_ptr(), p.value.data_ptr())
      << "a float32 model parameter is its own master: no copy";
  EXPECT_FALSE(master.params()[0].compute.defined());
  EXPECT_TRUE(master.state().empty());
}

TEST(MasterWeights, StateRoundTripRestoresMasterAndModel) {
  Generator gen(4);
  auto model = make_params(gen, DType::Float16);
  optim::MasterWeights master(model);
  optim::Sgd sgd(master.params(), {1e-3f, 0.f, 0.f, false});
  fill_grads(model, gen);
  master.grads_to_master();
  sgd.step();
  optim::NamedTensors saved;
  for (const auto& [name, t] : master.state()) saved.emplace_back(name, t.clone());
  ASSERT_EQ(saved.size(), model.size());
  EXPECT_EQ(saved[0].first, "w1.master");

  Generator other(99);
  auto fresh_model = make_params(other, DType::Float16);
  optim::MasterWeights fresh(fresh_model);
  fresh.load_state(saved);
  for (std::size_t k = 0; k < model.size(); ++k) {
    expect_bitwise_equal(fresh.params()[k].value, master.params()[k].value, "restored master");
    expect_bitwise_equal(fresh_model[k].value, model[k].value, "model refreshed from master");
  }
}

}  // namespace
}  // namespace gtl::testing
