// TODO 6: sharded checkpoints. Each rank's file holds exactly its shards and optimizer state, a
// run restarted from them with the same N continues bit for bit, another N or rank is refused, and
// the consolidated file holds every parameter of the single-process model under the names
// Trainer::save uses, equal to the trained weights.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtl/data/synthetic_digits.h"
#include "gtl/io/checkpoint_file.h"
#include "gtl/train/trainer.h"
#include "lab06_cases.h"
#include "lab06_student_call.h"
#include "lab06_test_util.h"

namespace lab06 {
namespace {

// The student's consolidate, called inside TODO 6's scope (lab06_student_call.h), after the
// ranks are done: it shadows lab06's in the tests below. The saves and loads inside train() hold
// their own scope (src/sharded_training.cpp).
void consolidate(const std::string& dir, int world_size, const gtl::nn::ModelConfig& config,
                 const std::string& path) {
  const auto call = lab06_student_call::todo6();
  lab06::consolidate(dir, world_size, config, path);
}

using testing::bitwise_diff;

// A fresh, empty folder for one test's files.
std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/lab06_ckpt_" + std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The lab model's weights before training, model order.
std::vector<float> initial_weights() {
  std::vector<float> w;
  for (const ParamRef& p : gtl::nn::make_model(lab_model())->parameters()) {
    const std::vector<float> v = p.value.to_vector();
    w.insert(w.end(), v.begin(), v.end());
  }
  return w;
}

// The float elements of a shard file's tensors under "optim." (its scalar entries are not tensors:
// get throws on them).
int64_t optimizer_elements(const gtl::io::CheckpointFile& ckpt) {
  int64_t elements = 0;
  for (const std::string& name : ckpt.names()) {
    if (name.rfind("optim.", 0) != 0) continue;
    try {
      elements += ckpt.get(name).numel();
    } catch (const gtl::Error&) {
      continue;  // a scalar entry
    }
  }
  return elements;
}

// Records, per rank, each unit's saved value shard (a digest) and the elements of the saved
// optimizer state (the tensors under "optim.").
void record_shard_files(gtl::judge::Outputs& out, const std::string& dir, int n, int64_t units) {
  for (int r = 0; r < n; ++r) {
    if (!std::filesystem::exists(shard_file(dir, r, n))) return;  // the test says which is missing
    const gtl::io::CheckpointFile ckpt = gtl::io::CheckpointFile::load(shard_file(dir, r, n));
    for (int64_t u = 0; u < units; ++u) {
      const std::string name = "unit" + std::to_string(u) + ".values";
      const std::vector<float> v =
          ckpt.has(name) ? ckpt.get(name).to_vector() : std::vector<float>{};
      out.record(v.size());
      out.record_digest(v.data(), v.size());
    }
    out.record(optimizer_elements(ckpt));
  }
}

// The consolidated file's parameters in model order (empty where an entry is missing).
std::vector<float> consolidated_weights(const std::string& path,
                                        const gtl::nn::ModelConfig& config) {
  const gtl::io::CheckpointFile full = gtl::io::CheckpointFile::load(path);
  std::vector<float> weights;
  for (const ParamRef& p : gtl::nn::make_model(config)->parameters()) {
    if (!full.has("model." + p.name)) return {};
    const std::vector<float> v = full.get("model." + p.name).to_vector();
    weights.insert(weights.end(), v.begin(), v.end());
  }
  return weights;
}

TrainConfig saving(const std::string& dir, int64_t steps, int64_t save_after) {
  TrainConfig c;
  c.prefetch = 1;
  c.steps = steps;
  c.checkpoint_dir = dir;
  c.save_after_steps = save_after;
  return c;
}

TEST(ShardedCheckpoint, EachRankSavesExactlyItsShardsAndOptimizerState) {
  const int n = 3;
  const std::string dir = temp_dir("own");
  testing::run(n, Stage::Zero3, saving(dir, 2, 2));
  const std::vector<int64_t> numels = testing::unit_numels(lab_model());
  gtl::judge::Outputs out("ShardedCheckpoint.EachRankSavesExactlyItsShardsAndOptimizerState");
  for (int r = 0; r < n; ++r) {
    const std::string path = shard_file(dir, r, n);
    ASSERT_TRUE(std::filesystem::exists(path)) << "rank " << r << " must write " << path;
    const gtl::io::CheckpointFile ckpt = gtl::io::CheckpointFile::load(path);
    int64_t values = 0, expected_values = 0, expected_optim = 0;
    for (const std::string& name : ckpt.names()) {
      if (name.rfind("unit", 0) == 0) values += ckpt.get(name).numel();
    }
    const int64_t optim = optimizer_elements(ckpt);
    for (int64_t numel : numels) {
      const gtl::nn::ShardLayout layout(numel, n);
      expected_values += layout.shard_size();
      expected_optim += 2 * layout.real_numel(r);
    }
    EXPECT_EQ(values, expected_values)
        << "rank " << r << ": the unit entries must be this rank's value shards (padding "
        << "included), not the full weights: a sharded checkpoint never gathers the model";
    EXPECT_EQ(optim, expected_optim)
        << "rank " << r << ": the float elements of the tensors under \"optim.\": expected "
        << "m and v of this rank's real shard elements (every tensor of optimizer.state()), and "
        << "nothing of any other rank's";
  }
  record_shard_files(out, dir, n, static_cast<int64_t>(numels.size()));
  std::filesystem::remove_all(dir);
}

TEST(ShardedCheckpoint, ResumesBitForBitWithTheSameWorldSize) {
  gtl::judge::Outputs out("ShardedCheckpoint.ResumesBitForBitWithTheSameWorldSize");
  for (int n : {2, 5}) {
    const std::string dir = temp_dir("resume" + std::to_string(n));
    const std::vector<TrainResult> whole = testing::run(n, Stage::Zero3, saving(dir, 4, 0));
    ASSERT_NE(bitwise_diff(whole[0].weights, initial_weights()), "")
        << "N " << n
        << ": 4 steps of ZeRO-3 left the weights as initialised: do TODO 4 first, "
           "there is nothing to resume until FSDP trains";
    testing::run(n, Stage::Zero3, saving(dir, 2, 2));  // steps 0, 1, then save
    TrainConfig resumed = saving(dir, 4, 0);
    resumed.resume_at_step = 2;  // a new run: load, then steps 2, 3
    const std::vector<TrainResult> second = testing::run(n, Stage::Zero3, resumed);
    lab06_cases::record_runs(out, second);
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(bitwise_diff(second[r].weights, whole[r].weights), "")
          << "N " << n << ", rank " << r << ": 2 steps + save + load + 2 steps must equal 4 "
          << "steps bit for bit: the resumed run did not continue where the saved one "
          << "stopped (what of the units and of AdamW do the files hold? TODO 6a)";
      const std::vector<float> last_two(whole[r].losses.begin() + 2, whole[r].losses.end());
      EXPECT_EQ(bitwise_diff(second[r].losses, last_two), "") << "N " << n << ", rank " << r;
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(ShardedCheckpoint, RefusesToLoadShardsCutForAnotherWorldSize) {
  const std::string dir = temp_dir("other_n");
  testing::run(2, Stage::Zero3, saving(dir, 1, 1));
  // Rename the N = 2 files as if they were N = 3's: the layout inside must still be checked.
  for (int r = 0; r < 2; ++r) {
    std::filesystem::copy_file(shard_file(dir, r, 2), shard_file(dir, r, 3));
  }
  std::filesystem::copy_file(shard_file(dir, 1, 2), shard_file(dir, 2, 3));
  TrainConfig resumed = saving(dir, 2, 0);
  resumed.resume_at_step = 1;
  bool threw = false;
  try {
    testing::run(3, Stage::Zero3, resumed);
  } catch (const gtl::Error&) {
    threw = true;
  }
  gtl::judge::Outputs("ShardedCheckpoint.RefusesToLoadShardsCutForAnotherWorldSize").record(threw);
  EXPECT_TRUE(threw)
      << "shards saved by 2 ranks loaded by 3: load_sharded must compare the file's world_size "
         "and rank with the communicator's and throw";
  std::filesystem::remove_all(dir);
}

TEST(ShardedCheckpoint, RefusesToLoadAnotherRanksShards) {
  const std::string dir = temp_dir("swapped");
  testing::run(2, Stage::Zero3, saving(dir, 1, 1));
  // Swap the two files: the same N and the same shapes, but each rank would get the other's
  // shard (a job restarted with its ranks renumbered). Only the saved rank tells.
  const std::string a = shard_file(dir, 0, 2), b = shard_file(dir, 1, 2), tmp = dir + "/tmp";
  std::filesystem::rename(a, tmp);
  std::filesystem::rename(b, a);
  std::filesystem::rename(tmp, b);
  TrainConfig resumed = saving(dir, 2, 0);
  resumed.resume_at_step = 1;
  bool threw = false;
  try {
    testing::run(2, Stage::Zero3, resumed);
  } catch (const gtl::Error&) {
    threw = true;
  }
  gtl::judge::Outputs("ShardedCheckpoint.RefusesToLoadAnotherRanksShards").record(threw);
  EXPECT_TRUE(threw)
      << "rank 0 loading the file rank 1 saved: load_sharded must compare the file's rank (and "
         "world_size) with the communicator's and throw";
  std::filesystem::remove_all(dir);
}

TEST(ShardedCheckpoint, ConsolidatesIntoTheSingleProcessModelsParameters) {
  gtl::judge::Outputs out("ShardedCheckpoint.ConsolidatesIntoTheSingleProcessModelsParameters");
  for (int n : {3, 5}) {
    const std::string dir = temp_dir("full" + std::to_string(n));
    const std::vector<TrainResult> run = testing::run(n, Stage::Zero3, saving(dir, 3, 3));
    const std::string path = dir + "/full.ckpt";
    consolidate(dir, n, lab_model(), path);
    const gtl::io::CheckpointFile full = gtl::io::CheckpointFile::load(path);
    std::vector<float> weights;
    for (const ParamRef& p : gtl::nn::make_model(lab_model())->parameters()) {
      ASSERT_TRUE(full.has("model." + p.name))
          << "N " << n << ": no entry model." << p.name << " (Trainer::save's name for it)";
      const Tensor t = full.get("model." + p.name);
      ASSERT_EQ(t.shape(), p.value.shape()) << "N " << n << ": shape of model." << p.name;
      const std::vector<float> v = t.to_vector();
      weights.insert(weights.end(), v.begin(), v.end());
    }
    out.record_digest(weights.data(), weights.size());
    EXPECT_EQ(bitwise_diff(weights, run[0].weights), "")
        << "N " << n << ": the consolidated parameters must be the trained weights: chunk r of "
        << "each unit from rank r's file, padding dropped";
    std::filesystem::remove_all(dir);
  }
}

// The consolidated file is a checkpoint the single-process trainer loads (Trainer::load_weights):
// after loading, the trainer's model holds the sharded run's weights bit for bit.
TEST(ShardedCheckpoint, ConsolidatesIntoAFileTheSingleProcessTrainerLoads) {
  const int n = 3;
  const std::string dir = temp_dir("trainer");
  const std::vector<TrainResult> run = testing::run(n, Stage::Zero3, saving(dir, 3, 3));
  consolidate(dir, n, lab_model(), dir + "/full.ckpt");
  gtl::train::TrainerOptions options;
  options.model = lab_model();
  gtl::train::Trainer trainer(
      options, std::make_shared<gtl::data::SyntheticDigits>(64, gtl::data::Split::Train, 1));
  ASSERT_NO_THROW(trainer.load_weights(dir + "/full.ckpt"))
      << "the single-process trainer must load the consolidated file: one model.<name> entry per "
      << "parameter, with the parameter's shape";
  std::vector<float> weights;
  for (const ParamRef& p : trainer.model().parameters()) {
    const std::vector<float> v = p.value.to_vector();
    weights.insert(weights.end(), v.begin(), v.end());
  }
  EXPECT_EQ(bitwise_diff(weights, run[0].weights), "")
      << "N " << n
      << ": the trainer loaded from the consolidated file must hold the trained weights";
  std::filesystem::remove_all(dir);
}

// Save, resume and consolidate a seeded run (model width, depth and weights, data seed, world).
TrainConfig seeded_saving(const lab06_cases::RunCase& c, const std::string& dir, int64_t steps,
                          int64_t save_after) {
  TrainConfig config = saving(dir, steps, save_after);
  config.model = c.config.model;
  config.data_seed = c.config.data_seed;
  return config;
}

TEST(ShardedCheckpoint, EachRankSavesExactlyItsShardsAndOptimizerStateOnASeededRun) {
  const std::string test =
      "ShardedCheckpoint.EachRankSavesExactlyItsShardsAndOptimizerStateOnASeededRun";
  gtl::judge::Outputs out(test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  const std::string dir = temp_dir("own_seeded");
  testing::run(c.world, Stage::Zero3, seeded_saving(c, dir, 2, 2));
  const std::vector<int64_t> numels = testing::unit_numels(c.config.model);
  record_shard_files(out, dir, c.world, static_cast<int64_t>(numels.size()));
  for (int r = 0; r < c.world; ++r) {
    const gtl::io::CheckpointFile ckpt = gtl::io::CheckpointFile::load(shard_file(dir, r, c.world));
    for (std::size_t u = 0; u < numels.size(); ++u) {
      const std::string name = "unit" + std::to_string(u) + ".values";
      ASSERT_TRUE(ckpt.has(name)) << lab06_cases::describe(c) << ", rank " << r << ": no " << name;
      EXPECT_EQ(ckpt.get(name).numel(), gtl::nn::ShardLayout(numels[u], c.world).shard_size())
          << lab06_cases::describe(c) << ", rank " << r << ": " << name
          << " must be the rank's value shard";
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(ShardedCheckpoint, ResumesBitForBitWithTheSameWorldSizeOnASeededRun) {
  const std::string test = "ShardedCheckpoint.ResumesBitForBitWithTheSameWorldSizeOnASeededRun";
  gtl::judge::Outputs out(test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  const std::string dir = temp_dir("resume_seeded");
  const std::vector<TrainResult> whole =
      testing::run(c.world, Stage::Zero3, seeded_saving(c, dir, 4, 0));
  testing::run(c.world, Stage::Zero3, seeded_saving(c, dir, 3, 3));
  TrainConfig resumed = seeded_saving(c, dir, 4, 0);
  resumed.resume_at_step = 3;
  const std::vector<TrainResult> second = testing::run(c.world, Stage::Zero3, resumed);
  lab06_cases::record_runs(out, second);
  for (int r = 0; r < c.world; ++r) {
    EXPECT_EQ(bitwise_diff(second[r].weights, whole[r].weights), "")
        << lab06_cases::describe(c) << ", rank " << r
        << ": 3 steps + save + load + 1 step must equal 4 steps bit for bit";
  }
  std::filesystem::remove_all(dir);
}

TEST(ShardedCheckpoint, ConsolidatesIntoTheSingleProcessModelsParametersOnASeededRun) {
  const std::string test =
      "ShardedCheckpoint.ConsolidatesIntoTheSingleProcessModelsParametersOnASeededRun";
  gtl::judge::Outputs out(test);
  const lab06_cases::RunCase c = lab06_cases::seeded_run(test);
  const std::string dir = temp_dir("full_seeded");
  const std::vector<TrainResult> run =
      testing::run(c.world, Stage::Zero3, seeded_saving(c, dir, 3, 3));
  consolidate(dir, c.world, c.config.model, dir + "/full.ckpt");
  const std::vector<float> weights = consolidated_weights(dir + "/full.ckpt", c.config.model);
  out.record_digest(weights.data(), weights.size());
  EXPECT_EQ(bitwise_diff(weights, run[0].weights), "")
      << lab06_cases::describe(c) << ": the consolidated parameters must be the trained weights "
      << "(every model.<name> entry, padding dropped)";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace lab06
