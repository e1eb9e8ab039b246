// Lab 03, TODO 6: the recipe of each precision; bf16 trains with no loss scaler.
#include <gtest/gtest.h>

#include <cmath>

#include "amp_loop.h"
#include "gtl_judge_output.h"

namespace {

using gtl::DType;

TEST(AmpRecipe, EachPrecisionHasItsRecipe) {
  const lab03::AmpRecipe fp32 = lab03::amp_recipe("fp32");
  EXPECT_EQ(fp32.policy.compute, DType::Float32);
  EXPECT_FALSE(fp32.loss_scaling || fp32.master_weights) << "TODO 6: float32 needs neither";
  EXPECT_EQ(fp32.init_scale, 1.f);

  const lab03::AmpRecipe fp16 = lab03::amp_recipe("fp16");
  EXPECT_EQ(fp16.policy.compute, DType::Float16);
  EXPECT_TRUE(fp16.loss_scaling) << "TODO 6: fp16 gradients below 2^-24 vanish: scale the loss";
  EXPECT_EQ(fp16.init_scale, 65536.f) << "TODO 6: the scaler starts at 2^16";
  EXPECT_TRUE(fp16.master_weights) << "TODO 6: fp16 weights lose small updates";

  const lab03::AmpRecipe bf16 = lab03::amp_recipe("bf16");
  gtl::judge::Outputs recorded("AmpRecipe.EachPrecisionHasItsRecipe");
  for (const lab03::AmpRecipe* r : {&fp32, &fp16, &bf16})
    recorded.record(static_cast<int>(r->policy.compute)), recorded.record(r->loss_scaling),
        recorded.record(r->init_scale), recorded.record(r->master_weights);
  EXPECT_EQ(bf16.policy.compute, DType::BFloat16);
  EXPECT_FALSE(bf16.loss_scaling)
      << "TODO 6: bf16 has float32's 8 exponent bits: no gradient underflows, no scaler";
  EXPECT_EQ(bf16.init_scale, 1.f) << "TODO 6: no scaler, scale 1";
  EXPECT_TRUE(bf16.master_weights) << "TODO 6: bf16 (7 mantissa bits) loses small updates too";
}

TEST(AmpRecipe, UnknownPrecisionIsAnError) {
  try {
    lab03::amp_recipe("fp8");
    FAIL() << "TODO 6: amp_recipe(\"fp8\") must throw gtl::Error";
  } catch (const gtl::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fp8"), std::string::npos)
        << "TODO 6: name the bad value; got: " << e.what();
  }
}

TEST(Bf16Training, TracksFloat32WithNoScaler) {
  const lab03::AmpRecipe recipe = lab03::amp_recipe("bf16");
  ASSERT_FALSE(recipe.loss_scaling) << "TODO 6: the bf16 recipe has no scaler";
  const auto fp32 = lab03_test::train_lab_model(gtl::nn::PrecisionPolicy::fp32(), nullptr, 60);
  const auto bf16 = lab03_test::train_lab_model(recipe.policy, nullptr, 60);
  gtl::judge::Outputs recorded("Bf16Training.TracksFloat32WithNoScaler");
  for (const auto& s : bf16) recorded.record(s.loss);
  // README, "How close is close": 4 u ln(10) with bf16's unit roundoff u = 2^-8 (8 bits of
  // precision, 8x fp16's error): 0.036. Measured here: 0.0073.
  const float tolerance = 4.f * 0x1p-8f * std::log(10.f);
  for (std::size_t i = 0; i < fp32.size(); ++i) {
    ASSERT_TRUE(std::isfinite(bf16[i].loss));
    ASSERT_LE(std::fabs(bf16[i].loss - fp32[i].loss), tolerance)
        << "step " << i << ": bf16 loss " << bf16[i].loss << " vs float32 " << fp32[i].loss;
  }
  EXPECT_LT(bf16.back().loss, 0.5f * bf16.front().loss) << "the bf16 run must learn";
}

}  // namespace
