// The same small model trained on the CPU and on the GPU follows the same loss curve.
//
// Same seed, same weights, same batches: only the order of additions inside GEMMs and reductions
// differs, so the losses drift apart slowly. Tolerance (fp32, TF32 off): every one of the 30
// losses within 1e-3 + 1e-3 |loss|. bf16 on the GPU vs fp32 on the CPU: within 5e-2 + 5e-2 |loss|.
// Emulated (each CUDA thread a fiber on one core): 6 steps of batches of 8, same tolerances.
#include <memory>

#include "gtl/data/synthetic_digits.h"
#include "gtl/train/trainer.h"
#include "gtl_test.h"

using namespace gtl;

namespace {
std::vector<float> losses(Device device, const std::string& precision, const std::string& model) {
  train::TrainerOptions o;
  o.model.kind = model;
  o.model.hidden = model == "mlp" ? 32 : 4;
  o.batch_size = gtl::testing::gpu_or_emulated(32, 8);
  o.device = device;
  o.precision = nn::PrecisionPolicy::parse(precision);
  train::Trainer t(o, std::make_shared<data::SyntheticDigits>(640, data::Split::Train, 4));
  std::vector<float> out;
  const int64_t steps = gtl::testing::gpu_or_emulated(30, 6);
  for (int64_t i = 0; i < steps; ++i) out.push_back(t.step().loss);
  return out;
}
}  // namespace

TEST(TrainerGpu, MlpLossCurveMatchesTheCpu) {
  GTL_REQUIRE_GPU();
  const std::vector<float> cpu = losses(Device::cpu(), "fp32", "mlp");
  const std::string err =
      gtl::testing::compare(losses(Device::cuda(0), "fp32", "mlp"), cpu, {1e-3, 1e-3});
  EXPECT_TRUE(err.empty()) << "fp32 MLP loss curve, GPU vs CPU (" << cpu.size()
                           << " steps): " << err;
}

TEST(TrainerGpu, CnnLossCurveMatchesTheCpu) {
  GTL_REQUIRE_GPU();
  const std::vector<float> cpu = losses(Device::cpu(), "fp32", "cnn");
  const std::string err =
      gtl::testing::compare(losses(Device::cuda(0), "fp32", "cnn"), cpu, {1e-3, 1e-3});
  EXPECT_TRUE(err.empty()) << "fp32 CNN loss curve, GPU vs CPU (" << cpu.size()
                           << " steps): " << err;
}

TEST(TrainerGpu, Bf16AndFp16CurvesStayCloseToFp32) {
  GTL_REQUIRE_GPU();
  const std::vector<float> cpu = losses(Device::cpu(), "fp32", "mlp");
  for (const char* p : {"bf16", "fp16"}) {
    const std::string err =
        gtl::testing::compare(losses(Device::cuda(0), p, "mlp"), cpu, {5e-2, 5e-2});
    EXPECT_TRUE(err.empty()) << p << " MLP loss curve on the GPU vs fp32 on the CPU: " << err;
  }
}
