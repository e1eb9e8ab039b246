// Resuming from a checkpoint continues with BITWISE the same losses as an uninterrupted run:
// N steps straight vs K steps, save, a fresh trainer (new model, optimizer, scaler, loader),
// load, N-K steps. Every loss is compared bit for bit: any state the checkpoint forgot (AdamW's
// moments or step count, the data order, the loss scale) changes some bit of some loss.
#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <memory>

#include "gtl/data/synthetic_digits.h"
#include "gtl/io/checkpoint_file.h"
#include "gtl/train/trainer.h"
#include "gtl_test.h"

using namespace gtl;

namespace {

constexpr int64_t kSteps = 24, kSaveAt = 13;  // 10 batches per epoch: resume crosses epochs

train::TrainerOptions small_options(const std::string& precision) {
  train::TrainerOptions o;
  o.model.hidden = 16;
  o.model.blocks = 1;
  o.batch_size = 32;
  o.precision = nn::PrecisionPolicy::parse(precision);
  o.seed = 3;
  return o;
}

std::vector<float> run_losses(const train::TrainerOptions& o,
                              std::shared_ptr<const data::Dataset> d, int64_t from, int64_t to,
                              const std::string& load, const std::string& save) {
  train::Trainer trainer(o, d);
  if (!load.empty()) trainer.load(load);
  EXPECT_EQ(trainer.steps_done(), from);
  std::vector<float> losses;
  while (trainer.steps_done() < to) losses.push_back(trainer.step().loss);
  if (!save.empty()) trainer.save(save);
  return losses;
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(getpid()) + ".ckpt"))
      .string();
}

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

void check_bitwise_resume(const std::string& precision, int64_t micro_batches) {
  train::TrainerOptions o = small_options(precision);
  o.micro_batches = micro_batches;
  auto data = std::make_shared<data::SyntheticDigits>(320, data::Split::Train, 1);
  const std::vector<float> straight = run_losses(o, data, 0, kSteps, "", "");
  const std::string path = temp_path("resume-" + precision);
  const std::vector<float> first = run_losses(o, data, 0, kSaveAt, "", path);
  const std::vector<float> second = run_losses(o, data, kSaveAt, kSteps, path, "");
  std::filesystem::remove(path);
  std::vector<float> resumed = first;
  resumed.insert(resumed.end(), second.begin(), second.end());
  ASSERT_EQ(resumed.size(), straight.size());
  for (std::size_t i = 0; i < straight.size(); ++i) {
    EXPECT_EQ(bits(resumed[i]), bits(straight[i]))
        << precision << " step " << i + 1 << ": resumed loss " << resumed[i]
        << " differs from the uninterrupted run's " << straight[i] << " (saved after step "
        << kSaveAt << "): the checkpoint misses some training state";
  }
  EXPECT_LT(straight.back(), straight.front())
      << "the model should learn within " << kSteps << " steps";
}

}  // namespace

TEST(Resume, Fp32LossesAreBitwiseIdentical) {
  check_bitwise_resume("fp32", 1);
}

TEST(Resume, Fp16WithLossScalerIsBitwiseIdentical) {
  check_bitwise_resume("fp16", 1);
}

TEST(Resume, Bf16WithMicroBatchesIsBitwiseIdentical) {
  check_bitwise_resume("bf16", 2);
}

TEST(Resume, MismatchedOptionsAreRefusedWithAReason) {
  auto data = std::make_shared<data::SyntheticDigits>(320, data::Split::Train, 1);
  const std::string path = temp_path("resume-mismatch");
  run_losses(small_options("fp32"), data, 0, 1, "", path);
  train::Trainer other(small_options("bf16"), data);
  try {
    other.load(path);
    FAIL() << "loading an fp32 checkpoint into a bf16 trainer must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("config.precision = fp32"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// load_weights takes the weights alone (e.g. consolidated from the shards of a sharded run): a
// fresh trainer then holds bitwise the saved weights and evaluates like the saver, but keeps its
// own step count; a file without some parameter is refused, naming it.
TEST(Resume, LoadWeightsTakesTheWeightsAlone) {
  auto data = std::make_shared<data::SyntheticDigits>(320, data::Split::Train, 1);
  const std::string path = temp_path("load-weights");
  train::Trainer saver(small_options("fp32"), data);
  for (int i = 0; i < 5; ++i) saver.step();
  saver.save(path);
  train::Trainer fresh(small_options("fp32"), data);
  fresh.load_weights(path);
  EXPECT_EQ(fresh.steps_done(), 0) << "load_weights restores the weights only";
  const std::vector<float> want = saver.parameters().values().to_vector();
  const std::vector<float> got = fresh.parameters().values().to_vector();
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
      << "the loaded weights must be the saved ones bit for bit";
  EXPECT_EQ(bits(fresh.evaluate(*data, 64).loss), bits(saver.evaluate(*data, 64).loss))
      << "same weights, same evaluation";
  io::CheckpointFile partial;
  partial.put("model.unrelated", Tensor::zeros({1}));
  partial.save(path);
  try {
    fresh.load_weights(path);
    FAIL() << "a file without the model's parameters must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("has no entry model."), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}
