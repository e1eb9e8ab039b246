// The training step: gradient accumulation over micro-batches equals one large batch, fp16 uses
// the loss scaler, evaluation measures accuracy, and errors are clear.
#include <memory>

#include "gtl/data/synthetic_digits.h"
#include "gtl/train/trainer.h"
#include "gtl_test.h"

using namespace gtl;

namespace {
train::TrainerOptions options() {
  train::TrainerOptions o;
  o.model.hidden = 16;
  o.model.blocks = 1;
  o.batch_size = 32;
  o.max_grad_norm = 0.f;  // compare raw gradients
  return o;
}
std::shared_ptr<data::SyntheticDigits> digits(int64_t n) {
  return std::make_shared<data::SyntheticDigits>(n, data::Split::Train, 2);
}
// The first loader batch of a trainer with these options, as CPU tensors.
std::pair<Tensor, Tensor> first_batch(const train::TrainerOptions& o,
                                      std::shared_ptr<const data::Dataset> d) {
  data::DataLoaderOptions lo;
  lo.batch_size = o.batch_size;
  lo.seed = o.seed;
  lo.drop_last = true;
  data::DataLoader loader(d, lo);
  std::optional<data::Batch> b = loader.next();
  return {b->images, b->labels};
}
}  // namespace

// Micro-batch 1 overwrites the flat gradient, the others accumulate into it (GradMode), each
// scaled by 1/parts: the result is the gradient of the whole batch's mean loss, up to rounding.
TEST(Trainer, MicroBatchAccumulationMatchesOneBatch) {
  auto d = digits(256);
  train::TrainerOptions whole = options(), split = options();
  split.micro_batches = 4;
  train::Trainer a(whole, d), b(split, d);
  auto [images, labels] = first_batch(whole, d);
  const train::StepStats sa = a.train_step(images, labels);
  const train::StepStats sb = b.train_step(images, labels);
  EXPECT_NEAR(sa.loss, sb.loss, 1e-5) << "mean of micro-batch losses != batch loss";
  // The gradients are still in the flat buffers after the step: compare them (AdamW's first
  // update is nearly lr * sign(g), which would hide a wrong gradient magnitude).
  gtl::testing::expect_close(b.parameters().grads(), a.parameters().grads(), {1e-6, 1e-4},
                             "accumulated gradient of 4 micro-batches vs one batch");
}

TEST(Trainer, Fp16UsesTheLossScalerAndStillLearns) {
  auto d = digits(640);
  train::TrainerOptions o = options();
  o.precision = nn::PrecisionPolicy::fp16();
  train::Trainer t(o, d);
  EXPECT_TRUE(t.scaler().enabled());
  EXPECT_EQ(t.scaler().scale(), 65536.f);
  float first = 0, last = 0;
  for (int i = 0; i < 40; ++i) {
    const train::StepStats s = t.step();
    if (i == 0) first = s.loss;
    last = s.loss;
  }
  EXPECT_LT(last, first) << "fp16 training with loss scaling should reduce the loss";
  train::TrainerOptions f32 = options();
  EXPECT_FALSE(train::Trainer(f32, d).scaler().enabled()) << "fp32 needs no loss scaling";
}

// loss_scaling = false: fp16 trains unscaled (scale 1, every step taken), the run that shows what
// the scaler is for (`train --precision fp16 --no-loss-scaling`).
TEST(Trainer, Fp16WithoutLossScalingRunsUnscaled) {
  auto d = digits(640);
  train::TrainerOptions o = options();
  o.precision = nn::PrecisionPolicy::fp16();
  o.loss_scaling = false;
  train::Trainer t(o, d);
  EXPECT_FALSE(t.scaler().enabled()) << "loss_scaling = false must turn fp16's scaler off";
  EXPECT_EQ(t.scaler().scale(), 1.f);
  auto [images, labels] = first_batch(o, d);
  EXPECT_TRUE(t.train_step(images, labels).stepped);
  EXPECT_EQ(t.scaler().scale(), 1.f) << "an unscaled run never changes its scale";
}

TEST(Trainer, EvaluateCountsCorrectPredictions) {
  auto d = digits(256);
  train::Trainer t(options(), d);
  const train::EvalStats before = t.evaluate(*d, 200, 64);
  EXPECT_EQ(before.samples, 200);
  for (int i = 0; i < 60; ++i) t.step();
  const train::EvalStats after = t.evaluate(*d, 200, 64);
  EXPECT_GT(after.accuracy, before.accuracy) << "training should raise the training accuracy";
  EXPECT_LT(after.loss, before.loss);
}

TEST(Trainer, CudaWithoutAGpuIsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "this machine has a GPU";
  train::TrainerOptions o = options();
  o.device = Device::cuda(0);
  try {
    train::Trainer t(o, digits(64));
    FAIL() << "a CUDA trainer without a GPU must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cuda:0 requested"), std::string::npos) << e.what();
  }
}
