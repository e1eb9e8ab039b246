// LossScaler with torch GradScaler semantics: unscale, skip-and-backoff on overflow, growth after
// growth_interval clean steps, checkpointable state.
#include "gtl/optim/loss_scaler.h"

#include <cmath>

#include "gtl/optim/master_weights.h"
#include "gtl/optim/sgd.h"
#include "optim_test_util.h"

namespace gtl::testing {
namespace {

optim::ParamRef scalar_param(float value, float grad) {
  return {Tensor::full({1}, value), Tensor::full({1}, grad), {}, "w"};
}

TEST(LossScaler, UnscaleDividesByTheScale) {
  optim::LossScaler scaler;
  EXPECT_EQ(scaler.scale(), 65536.f);
  Generator gen(41);
  auto params = make_params(gen);
  fill_grads(params, gen, 1000.f);
  std::vector<std::vector<double>> expected;
  for (const auto& p : params) {
    expected.push_back(to_double(p.grad));
    for (double& g : expected.back()) g /= 65536.0;
  }
  scaler.unscale_(params);
  for (std::size_t k = 0; k < params.size(); ++k) {
    const std::string err = compare(params[k].grad.to_vector(), to_float(expected[k]), {0, 1e-7});
    EXPECT_TRUE(err.empty()) << params[k].name << ": unscale_ must multiply by 1/scale: " << err;
  }
  EXPECT_THROW(scaler.unscale_(params), Error) << "unscaling twice in one step must be refused";
}

TEST(LossScaler, OverflowSkipsTheStepAndBacksOff) {
  optim::ParamRef p = scalar_param(1.f, INFINITY);
  optim::Sgd sgd({p}, {0.1f, 0.f, 0.f, false});
  optim::LossScaler scaler;
  EXPECT_FALSE(scaler.step(sgd)) << "a step with an inf gradient must be skipped";
  EXPECT_TRUE(scaler.found_inf());
  EXPECT_EQ(p.value.item(), 1.f) << "the skipped step must leave the weight untouched";
  EXPECT_EQ(sgd.step_count(), 0);
  scaler.update();
  EXPECT_EQ(scaler.scale(), 32768.f) << "overflow halves the scale (backoff 0.5)";

  Tensor(p.grad).fill_(NAN);
  EXPECT_FALSE(scaler.step(sgd)) << "NaN gradients must be skipped like inf";
  scaler.update();
  EXPECT_EQ(scaler.scale(), 16384.f);
}

TEST(LossScaler, GrowsAfterIntervalOfCleanSteps) {
  optim::ParamRef p = scalar_param(1.f, 0.f);
  optim::Sgd sgd({p}, {0.1f, 0.f, 0.f, false});
  optim::LossScaler scaler({1024.f, 2.f, 0.5f, 3, true});
  for (int i = 0; i < 2; ++i) {
    Tensor(p.grad).fill_(1024.0);
    EXPECT_TRUE(scaler.step(sgd));
    scaler.update();
    EXPECT_EQ(scaler.scale(), 1024.f) << "no growth before growth_interval clean steps";
  }
  EXPECT_EQ(scaler.state().growth_tracker, 2);
  // An overflow resets the count of clean steps.
  Tensor(p.grad).fill_(INFINITY);
  scaler.step(sgd);
  scaler.update();
  EXPECT_EQ(scaler.scale(), 512.f);
  EXPECT_EQ(scaler.state().growth_tracker, 0) << "an overflow restarts the growth count";
  for (int i = 0; i < 3; ++i) {
    Tensor(p.grad).fill_(512.0);
    EXPECT_TRUE(scaler.step(sgd));
    scaler.update();
  }
  EXPECT_EQ(scaler.scale(), 1024.f) << "3 clean steps in a row double the scale";
  EXPECT_EQ(scaler.state().growth_tracker, 0);
  // 5 applied steps, each with an unscaled gradient of exactly 1: p = 1 - 5 * 0.1.
  EXPECT_TRUE(compare(p.value.to_vector(), {0.5f}, {1e-6, 0}).empty())
      << "the clean steps must use the unscaled gradient 1, got " << p.value.str();
}

// The reason for the scaler: a gradient of 1e-8 underflows to 0 in fp16, but 1e-8 * 65536 is
// representable; widened to the float32 master and unscaled there, it comes back as ~1e-8.
TEST(LossScaler, ScalingRescuesFp16Underflow) {
  EXPECT_EQ(static_cast<float>(half(1e-8f)), 0.f) << "premise: 1e-8 underflows in fp16";
  optim::ParamRef model{Tensor::ones({1}, DType::Float16),
                        Tensor::full({1}, 1e-8 * 65536.0, DType::Float16),
                        {},
                        "w"};
  optim::MasterWeights master({model});
  optim::LossScaler scaler;
  master.grads_to_master();
  scaler.unscale_(master.params());
  EXPECT_TRUE(compare(master.params()[0].grad.to_vector(), {1e-8f}, {0, 1e-3}).empty())
      << "unscaled in float32 the gradient is 1e-8 again, got " << master.params()[0].grad.str();
}

TEST(LossScaler, StateRoundTrip) {
  optim::LossScaler a({1024.f, 2.f, 0.5f, 3, true});
  optim::ParamRef p = scalar_param(1.f, 1.f);
  optim::Sgd sgd({p}, {});
  a.step(sgd);
  a.update();
  optim::LossScaler b({1024.f, 2.f, 0.5f, 3, true});
  b.load_state(a.state());
  EXPECT_EQ(b.scale(), a.scale());
  EXPECT_EQ(b.state().growth_tracker, 1);
  EXPECT_THROW(b.load_state({-1.f, 0}), Error) << "a negative scale must be refused";
}

TEST(LossScaler, DisabledIsTransparent) {
  optim::ParamRef p = scalar_param(1.f, 2.f);
  optim::Sgd sgd({p}, {0.25f, 0.f, 0.f, false});
  optim::LossScaler scaler({65536.f, 2.f, 0.5f, 2000, false});
  EXPECT_EQ(scaler.scale(), 1.f);
  EXPECT_TRUE(scaler.step(sgd));
  scaler.update();
  EXPECT_EQ(p.value.item(), 0.5f) << "a disabled scaler steps with the raw gradient";
}

}  // namespace
}  // namespace gtl::testing
