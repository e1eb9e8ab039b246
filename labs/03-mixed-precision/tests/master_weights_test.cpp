// Lab 03, TODO 4: float32 master weights keep the small updates that half weights lose.
#include <gtest/gtest.h>

#include <cmath>

#include "amp_loop.h"
#include "gtl/optim/master_weights.h"
#include "gtl/optim/sgd.h"
#include "gtl/tensor/half.h"
#include "gtl_judge_output.h"
#include "lab03_cases.h"
#include "lab03_student_call.h"
#include "mixed_precision.h"

namespace {

using gtl::DType;
using gtl::Tensor;
using gtl::optim::ParamRef;

// A half parameter of `n` elements, all `value`, its gradient all `grad`.
ParamRef half_param(DType dtype, int64_t n, float value, float grad, const char* name) {
  return ParamRef{Tensor::full({n}, value, dtype), Tensor::full({n}, grad, dtype), Tensor(), name};
}

float first(const Tensor& t) {
  return t.to(DType::Float32).to_vector()[0];
}

TEST(MasterWeights, MastersAreFloat32CopiesOfTheModelWeights) {
  const auto call = lab03_student_call::todo4();  // no core master weights inside
  const lab03::MasterWeights mw({half_param(DType::Float16, 4, 0.1f, 0.f, "a"),
                                 half_param(DType::Float32, 3, 0.1f, 0.f, "c"),
                                 half_param(DType::BFloat16, 2, 3.f, 0.f, "b")});
  ASSERT_EQ(mw.masters().size(), 3u) << "TODO 4: one master per parameter";
  for (std::size_t k = 0; k < 3; ++k) {
    const ParamRef& m = mw.masters()[k];
    const ParamRef& p = mw.model_params()[k];
    ASSERT_TRUE(m.value.defined() && m.value.dtype() == DType::Float32 && m.grad.defined() &&
                m.grad.dtype() == DType::Float32)
        << "TODO 4: master '" << p.name << "': value and grad are float32";
    EXPECT_EQ(m.value.shape(), p.value.shape());
    EXPECT_EQ(m.name, p.name) << "TODO 4: masters keep the names (checkpoints use them)";
    EXPECT_EQ(m.value.to_vector(), p.value.to(DType::Float32).to_vector())
        << "TODO 4: master '" << p.name << "' starts as the exact widening of the model's value";
    if (p.value.dtype() != DType::Float32) {
      EXPECT_FALSE(m.value.data_ptr() == p.value.data_ptr())
          << "TODO 4: the master's value and the half weight have the same data pointer: a "
             "master must keep what rounding to the model's dtype drops";
    }
  }
}

// The bytes a set of masters leaves allocated while it lives.
template <typename Masters>
int64_t bytes_held(const std::vector<ParamRef>& model) {
  auto allocator = gtl::current_allocator(gtl::Device::cpu());
  const int64_t before = allocator->stats().allocated_bytes;
  const Masters masters(model);
  return allocator->stats().allocated_bytes - before;
}

TEST(MasterWeights, BuildingAllocatesWhatTheCoreAllocates) {
  const std::vector<ParamRef> model = lab03_cases::seeded_model_params();
  const int64_t got = [&] {
    const auto call = lab03_student_call::todo4();  // yours inside, the core's below
    return bytes_held<lab03::MasterWeights>(model);
  }();
  const int64_t want = bytes_held<gtl::optim::MasterWeights>(model);
  EXPECT_EQ(got, want)
      << "TODO 4: masters for an fp16 parameter of 37 elements, a bf16 one of 19 and a float32 "
         "one of 11 hold "
      << got << " bytes, the core's " << want
      << ". Revisit what a master must own, and what it can share with the model's own tensors.";
}

// Values and gradients drawn from the grading seed, two backwards, against the core's master
// weights on the same scenario; what yours gave goes to the judge.
TEST(MasterWeights, SeededValuesWidenAndRoundBackLikeTheCore) {
  const auto got = [] {
    const auto call = lab03_student_call::todo4();  // yours inside, the core's below
    return lab03_cases::master_weights_scenario<lab03::MasterWeights>(
        [](const lab03::MasterWeights& m) -> const std::vector<ParamRef>& { return m.masters(); });
  }();
  const auto want = lab03_cases::master_weights_scenario<gtl::optim::MasterWeights>(
      [](const gtl::optim::MasterWeights& m) -> const std::vector<ParamRef>& {
        return m.params();
      });
  gtl::judge::Outputs recorded("MasterWeights.SeededValuesWidenAndRoundBackLikeTheCore");
  for (const auto& v : got) recorded.record_all(v);
  const char* what[] = {
      "TODO 4: the masters of an fp16, a bf16 and a float32 parameter (exact widening)",
      "TODO 4: the master gradients (exact widening)",
      "TODO 4: the master gradients after a second backward wrote new model gradients",
      "TODO 4: the model after refresh_model (round-to-nearest-even of the masters)"};
  for (std::size_t k = 0; k < 4; ++k)
    EXPECT_EQ(got[k], want[k]) << what[k] << " (" << gtl::test_seed::describe() << ")";
}

TEST(MasterWeights, GradientsWidenExactly) {
  const auto call = lab03_student_call::todo4();  // no core master weights inside
  const lab03::MasterWeights mw({half_param(DType::Float16, 3, 1.f, 0x1p-24f, "w")});
  mw.grads_to_master();
  EXPECT_EQ(mw.masters()[0].grad.to_vector(), std::vector<float>(3, 0x1p-24f))
      << "TODO 4: master grad = float32(half grad): the smallest fp16 subnormal 2^-24 stays "
         "exactly 2^-24";
}

// Just below 1 fp16 numbers are 2^-11 apart: an update of -1e-4 is below half that step
// (2^-12 = 2.4e-4).
constexpr float kLr = 1e-4f;
constexpr int kSteps = 100;

TEST(MasterWeights, KeepTheSmallUpdatesThatPureFp16Loses) {
  // Pure fp16: SGD on the half weights themselves. Each step rounds 1 - 1e-4 back to 1.
  ParamRef pure = half_param(DType::Float16, 1, 1.f, 1.f, "w");
  gtl::optim::Sgd pure_sgd({pure}, gtl::optim::SgdOptions{kLr, 0.f, 0.f});
  for (int s = 0; s < kSteps; ++s) pure_sgd.step();
  ASSERT_EQ(first(pure.value), 1.f) << "(the core's pure-fp16 SGD loses every update)";

  // Masters: SGD on the float32 masters, the model refreshed after every step.
  const auto call = lab03_student_call::todo4();  // no core master weights below
  const ParamRef model = half_param(DType::Float16, 1, 1.f, 1.f, "w");
  const lab03::MasterWeights mw({model});
  gtl::optim::Sgd sgd(mw.masters(), gtl::optim::SgdOptions{kLr, 0.f, 0.f});
  float expected = 1.f;  // the float32 trajectory, step by step
  for (int s = 0; s < kSteps; ++s) {
    mw.grads_to_master();
    sgd.step();
    mw.refresh_model();
    expected -= kLr * 1.f;
    ASSERT_EQ(first(mw.masters()[0].value), expected)
        << "TODO 4: step " << s + 1 << ": the master is " << first(mw.masters()[0].value)
        << ", expected " << expected << " (every update of " << kLr << " kept in float32)";
    ASSERT_EQ(model.value.to(DType::Float32).to_vector()[0],
              static_cast<float>(gtl::half(expected)))
        << "TODO 4: step " << s + 1 << ": the model's half weight must be round(master), "
        << "refreshed after every step";
  }
  // 100 updates of 1e-4 moved the weight by 0.01: the half weight shows it (1 - 0.01 rounds to
  // 0.99023), pure fp16 is still exactly 1. Tolerance 1e-3 < the 0.01 a pure-fp16 solution loses.
  EXPECT_NEAR(first(model.value), 0.99f, 1e-3f) << "TODO 4: the model must see the change";
}

TEST(MasterWeights, Bf16WeightsFollowTheirMasters) {
  const auto call = lab03_student_call::todo4();  // no core master weights inside
  const ParamRef model = half_param(DType::BFloat16, 1, 1.f, 1.f, "w");
  const lab03::MasterWeights mw({model});
  gtl::optim::Sgd sgd(mw.masters(), gtl::optim::SgdOptions{1e-3f, 0.f, 0.f});
  for (int s = 0; s < 20; ++s) {
    mw.grads_to_master();
    sgd.step();
    mw.refresh_model();
  }
  EXPECT_EQ(first(model.value), static_cast<float>(gtl::bfloat16(first(mw.masters()[0].value))))
      << "TODO 4: model = round_bf16(master)";
  EXPECT_LT(first(model.value), 1.f) << "TODO 4: 20 updates of 1e-3 must show in the bf16 weight";
}

TEST(MasterWeights, TrainTheLabModelWhoseMatricesAreBf16) {
  // The lab model with its weight matrices stored in bf16 (value and gradient: Linear computes
  // with them as they are and writes bf16 weight gradients); biases and LayerNorm stay float32.
  // Every parameter goes to your MasterWeights, AdamW steps its masters(); the model is refreshed
  // after every step.
  gtl::nn::ModelConfig config;
  auto model = gtl::nn::make_model(config);
  std::vector<ParamRef> params;
  const std::vector<bool> matrices = lab03_cases::read_through_compute_copy(config);
  const std::vector<ParamRef*> slots = model->parameter_slots();
  for (std::size_t k = 0; k < slots.size(); ++k) {
    ParamRef* slot = slots[k];
    if (matrices[k]) {
      slot->value = slot->value.to(DType::BFloat16);
      slot->grad = Tensor::zeros(slot->value.shape(), DType::BFloat16);
    }
    params.push_back(*slot);
  }
  // Your master weights inside TODO 4's scope; the backward between them stays outside (the
  // core's Module::backward widens half gradients with the core's convert_into itself).
  const auto in_todo4 = [](auto f) {
    const auto call = lab03_student_call::todo4();
    return f();
  };
  const lab03::MasterWeights mw = in_todo4([&] { return lab03::MasterWeights(params); });
  const std::vector<ParamRef>& masters = mw.masters();
  gtl::optim::AdamWOptions ao;
  ao.lr = 2e-3f;
  ao.weight_decay = 0.f;
  gtl::optim::AdamW adamw(masters, ao);
  gtl::data::DataLoaderOptions lo;
  lo.batch_size = 64;
  gtl::data::DataLoader loader(std::make_shared<gtl::data::SyntheticDigits>(64 * 40), lo);
  const gtl::nn::CrossEntropyLoss head;
  const auto fp32 = lab03_test::train_lab_model(gtl::nn::PrecisionPolicy::fp32(), nullptr, 40,
                                                lab03_test::StepEnd::ClipAndStep);
  gtl::nn::PrecisionScope scope(gtl::nn::PrecisionPolicy::bf16());
  // README, "How close is close": 4 u ln(10), u = 2^-8 (bf16) for this bf16 run.
  const float tolerance = 4.f * 0x1p-8f * std::log(10.f);
  for (std::size_t step = 0; step < fp32.size(); ++step) {
    std::optional<gtl::data::Batch> batch = loader.next();
    batch->wait();
    gtl::nn::Context ctx, loss_ctx;
    const float loss =
        head.forward(model->forward(batch->images, ctx), batch->labels, loss_ctx).item();
    model->backward(ctx, head.backward(loss_ctx, 1.f));
    in_todo4([&] { mw.grads_to_master(); });
    gtl::optim::clip_grad_norm_(masters, 1.f);
    adamw.step();
    in_todo4([&] { mw.refresh_model(); });
    ASSERT_LE(std::fabs(loss - fp32[step].loss), tolerance)
        << "TODO 4: step " << step << ": the bf16 model with float32 masters has loss " << loss
        << ", float32 training " << fp32[step].loss << " (bound " << tolerance
        << "): this loop calls grads_to_master after backward and refresh_model after AdamW; "
           "revisit what each hands over (every element, exactly widened or rounded to nearest)";
  }
  for (std::size_t k = 0; k < params.size(); ++k) {
    const float model_weight = params[k].value.to(DType::Float32).to_vector()[0];
    const float master = masters[k].value.to_vector()[0];
    const float want = params[k].value.dtype() == DType::BFloat16
                           ? static_cast<float>(gtl::bfloat16(master))
                           : master;
    EXPECT_EQ(model_weight, want) << "TODO 4: after training, '" << params[k].name << "' ("
                                  << params[k].value.dtype() << ") reads " << model_weight
                                  << ", its master " << master;
  }
}

}  // namespace
