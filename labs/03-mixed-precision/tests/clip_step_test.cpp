// Lab 03, TODO 5: clipping by the global norm, and the end of a loss-scaled step.
// The loss scaler here is the core's (an adapter below), so this step's checks do not need yours.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "amp_loop.h"
#include "gtl/optim/grad_clip.h"
#include "gtl/optim/loss_scaler.h"
#include "gtl/optim/sgd.h"
#include "gtl_judge_output.h"
#include "lab03_cases.h"
#include "lab03_student_call.h"
#include "mixed_precision.h"

namespace {

using gtl::Tensor;
using gtl::optim::ParamRef;

// The core's reference scaler behind the lab's interface (shared with the judge).
using lab03_cases::CoreScaler;

// Two parameters whose unscaled gradients are (3, 0) and (0, 4): global norm 5.
struct Rig {
  ParamRef a{Tensor::zeros({2}), Tensor::zeros({2}), Tensor(), "a"};
  ParamRef b{Tensor::zeros({2}), Tensor::zeros({2}), Tensor(), "b"};
  gtl::optim::Sgd sgd{{a, b}, gtl::optim::SgdOptions{1.f, 0.f, 0.f}};
  void backward(float scale) {
    a.grad.data<float>()[0] = 3.f * scale;
    b.grad.data<float>()[1] = 4.f * scale;
  }
};

// The true gradients (3, 0) and (0, 4) clipped to `max_norm` by the core's clip_grad_norm_.
std::vector<std::vector<float>> core_clipped(float max_norm) {
  Rig rig;
  rig.backward(1.f);
  gtl::optim::clip_grad_norm_({rig.a, rig.b}, max_norm);
  return {rig.a.grad.to_vector(), rig.b.grad.to_vector()};
}

TEST(ClipByGlobalNorm, ScalesEveryGradientByOneCoefficient) {
  Rig rig;
  rig.backward(1.f);
  const float norm = lab03_student_call::clip_by_global_norm({rig.a, rig.b}, 1.f);
  EXPECT_EQ(norm, 5.f) << "TODO 5 (clip_by_global_norm): gradients (3, 0) and (0, 4): expected the "
                          "global norm 5, got "
                       << norm;
  const auto want = core_clipped(1.f);
  EXPECT_EQ(rig.a.grad.to_vector(), want[0])
      << "TODO 5 (clip_by_global_norm): max_norm 1: the gradient 3 clipped is "
      << rig.a.grad.to_vector()[0] << ", the core's clip_grad_norm_ makes it " << want[0][0]
      << " (one coefficient for every gradient, computed as torch's clip_grad_norm_ computes "
         "it: the header)";
  EXPECT_EQ(rig.b.grad.to_vector(), want[1])
      << "TODO 5 (clip_by_global_norm): max_norm 1: the gradient 4 clipped is "
      << rig.b.grad.to_vector()[1] << ", the core's clip_grad_norm_ makes it " << want[1][1];
}

// Gradients and a max norm drawn from the grading seed, against the core's clip_grad_norm_; the
// norm and the clipped gradients go to the judge.
TEST(ClipByGlobalNorm, SeededGradientsClipLikeTheCore) {
  auto [got, max_norm] = lab03_cases::seeded_clip_case();
  auto [want, same_max_norm] = lab03_cases::seeded_clip_case();
  const float norm = lab03_student_call::clip_by_global_norm(got, max_norm);
  const float want_norm = gtl::optim::clip_grad_norm_(want, same_max_norm).item();
  gtl::judge::Outputs recorded("ClipByGlobalNorm.SeededGradientsClipLikeTheCore");
  recorded.record(norm);
  for (const ParamRef& p : got) recorded.record_all(p.grad.to_vector());
  EXPECT_NEAR(norm, want_norm, 1e-5f * want_norm)
      << "TODO 5 (clip_by_global_norm): the global norm of the seeded gradients (max norm "
      << max_norm << ", " << gtl::test_seed::describe() << ")";
  for (std::size_t k = 0; k < got.size(); ++k) {
    const std::vector<float> g = got[k].grad.to_vector(), w = want[k].grad.to_vector();
    for (std::size_t i = 0; i < g.size(); ++i)
      ASSERT_NEAR(g[i], w[i], 1e-5f * std::fabs(w[i]) + 1e-7f)
          << "TODO 5 (clip_by_global_norm): gradient " << k << "[" << i << "] after clipping to "
          << max_norm << " (" << gtl::test_seed::describe() << ")";
  }
}

TEST(ClipByGlobalNorm, LeavesSmallGradientsAlone) {
  Rig rig;
  rig.backward(0.1f);
  const std::vector<float> a = rig.a.grad.to_vector();
  EXPECT_FLOAT_EQ(lab03_student_call::clip_by_global_norm({rig.a, rig.b}, 1.f), 0.5f);
  EXPECT_EQ(rig.a.grad.to_vector(), a) << "TODO 5 (clip_by_global_norm): global norm 0.5, max_norm "
                                          "1: expected the gradients unchanged, the first is now "
                                       << rig.a.grad.to_vector()[0];
}

TEST(ClipByGlobalNorm, AccumulatesWithoutOverflow) {
  // A norm that fits a float, of gradients that fit a float.
  ParamRef p{Tensor::full({2}, 0.f), Tensor::full({2}, 1e20f), Tensor(), "p"};
  const float norm = lab03_student_call::clip_by_global_norm({p}, 1.f);
  EXPECT_FLOAT_EQ(norm, 1.41421356e20f) << "TODO 5 (clip_by_global_norm): two gradients of 1e20 "
                                           "have a finite global norm, 1.4e20 (it fits a float), "
                                           "and yours came back as "
                                        << norm;
}

TEST(AmpStep, ClipsAScaledStepToMaxNorm) {
  Rig rig;
  CoreScaler scaler(1024.f);
  rig.backward(scaler.scale());  // scaled gradients: norm 5120
  const lab03::StepOutcome out =
      lab03_student_call::finish_amp_step(scaler, {rig.a, rig.b}, rig.sgd, 1.f);
  EXPECT_TRUE(out.stepped);
  EXPECT_EQ(out.grad_norm, 5.f)
      << "TODO 5 (finish_amp_step): scale 1024, true gradients (3, 0) and (0, 4): "
         "expected grad_norm 5, got "
      << out.grad_norm;
  const auto want = core_clipped(1.f);
  EXPECT_EQ(rig.a.value.to_vector()[0], -want[0][0])
      << "TODO 5 (finish_amp_step): the update is " << rig.a.value.to_vector()[0]
      << ", not minus the unscaled "
      << "gradient clipped to norm 1 (SGD lr 1), " << -want[0][0]
      << ": revisit the order of the step's three operations";
  EXPECT_EQ(rig.b.value.to_vector()[1], -want[1][1]);
  EXPECT_EQ(scaler.unscales, 1) << "TODO 5 (finish_amp_step): unscale exactly once per step";
  EXPECT_EQ(scaler.updates, 1) << "TODO 5 (finish_amp_step): update the scale once per step";
}

TEST(AmpStep, ReportsTheNormClippingMeasuredBelowMaxNorm) {
  Rig rig;
  CoreScaler scaler(8.f);
  rig.backward(scaler.scale());
  const lab03::StepOutcome out =
      lab03_student_call::finish_amp_step(scaler, {rig.a, rig.b}, rig.sgd, 10.f);
  EXPECT_TRUE(out.stepped);
  EXPECT_EQ(out.grad_norm, 5.f)
      << "TODO 5 (finish_amp_step): scale 8, true gradients (3, 0) and (0, 4), max_norm "
         "10: clipping ran and measured 5 (it scaled nothing), got "
      << out.grad_norm;
  EXPECT_EQ(rig.a.value.to_vector()[0], -3.f)
      << "TODO 5 (finish_amp_step): unscaled, and below max_norm";
}

TEST(AmpStep, NoClippingWhenMaxNormIsZero) {
  Rig rig;
  CoreScaler scaler(4.f);
  rig.backward(scaler.scale());
  const lab03::StepOutcome out =
      lab03_student_call::finish_amp_step(scaler, {rig.a, rig.b}, rig.sgd, 0.f);
  EXPECT_TRUE(out.stepped);
  EXPECT_EQ(out.grad_norm, 0.f)
      << "TODO 5 (finish_amp_step): max_norm <= 0: no clipping, grad_norm 0";
  EXPECT_EQ(rig.a.value.to_vector()[0], -3.f)
      << "TODO 5 (finish_amp_step): unscaled but not clipped";
}

TEST(AmpStep, AnOverflowedStepIsSkippedCleanly) {
  Rig rig;
  CoreScaler scaler(1024.f);
  rig.backward(scaler.scale());
  rig.a.grad.data<float>()[1] = std::numeric_limits<float>::infinity();
  const lab03::StepOutcome out =
      lab03_student_call::finish_amp_step(scaler, {rig.a, rig.b}, rig.sgd, 1.f);
  EXPECT_FALSE(out.stepped) << "TODO 5 (finish_amp_step): an inf gradient: skip the step";
  EXPECT_EQ(out.grad_norm, 0.f)
      << "TODO 5 (finish_amp_step): an overflowed step: expected grad_norm 0 (not "
         "clipped), got "
      << out.grad_norm;
  EXPECT_EQ(rig.a.value.to_vector(), std::vector<float>(2, 0.f))
      << "TODO 5 (finish_amp_step): no update";
  EXPECT_EQ(rig.b.value.to_vector(), std::vector<float>(2, 0.f))
      << "TODO 5 (finish_amp_step): no update";
  EXPECT_EQ(rig.a.grad.to_vector()[0], 3.f)
      << "TODO 5 (finish_amp_step): after an overflowed step the finite gradient a[0] is "
      << rig.a.grad.to_vector()[0] << ", expected its unscaled value 3";
  EXPECT_EQ(rig.sgd.step_count(), 0) << "TODO 5 (finish_amp_step): the optimizer did not step";
  EXPECT_EQ(scaler.scale(), 512.f)
      << "TODO 5 (finish_amp_step): update() still runs: the scale halves";
}

TEST(AmpStep, TrainsTheLabModelInFp16LikeFloat32) {
  // Your finish_amp_step ends every step of a real fp16 run (the core's scaler, AdamW).
  const auto fp32 = lab03_test::train_lab_model(gtl::nn::PrecisionPolicy::fp32(), nullptr, 40,
                                                lab03_test::StepEnd::ClipAndStep);
  CoreScaler scaler(65536.f);
  const auto fp16 = [&] {
    const auto call = lab03_student_call::todo5_with_core_scaler();  // the loop clips nothing
    return lab03_test::train_lab_model(gtl::nn::PrecisionPolicy::fp16(), &scaler, 40,
                                       lab03_test::StepEnd::YourFinishAmpStep);
  }();
  const float tolerance = 4.f * 0x1p-11f * std::log(10.f);  // README, "How close is close"
  for (std::size_t i = 0; i < fp32.size(); ++i) {
    ASSERT_TRUE(fp16[i].stepped) << "TODO 5 (finish_amp_step): step " << i
                                 << " skipped: no overflow at 2^16";
    ASSERT_LE(std::fabs(fp16[i].loss - fp32[i].loss), tolerance)
        << "TODO 5 (finish_amp_step): step " << i << ": fp16 loss " << fp16[i].loss
        << " vs float32 " << fp32[i].loss << " (bound " << tolerance << ")";
  }
  EXPECT_EQ(scaler.unscales, 40) << "TODO 5 (finish_amp_step): one unscale per step";
}

}  // namespace
