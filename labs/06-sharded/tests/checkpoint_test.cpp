// TODO 6: sharded checkpoints. Each rank's file holds exactly its shards and optimizer state, a
// run restarted from them with the same N continues bit for bit, another N or rank is refused, and
// the consolidated file holds every parameter of the single-process model under the names
// Trainer::save uses, equal to the trained weights.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "gtl/io/checkpoint_file.h"
#include "lab06_test_util.h"

namespace lab06 {
namespace {

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
  for (int r = 0; r < n; ++r) {
    const std::string path = shard_file(dir, r, n);
    ASSERT_TRUE(std::filesystem::exists(path)) << "rank " << r << " must write " << path;
    const gtl::io::CheckpointFile ckpt = gtl::io::CheckpointFile::load(path);
    int64_t values = 0, optim = 0, expected_values = 0, expected_optim = 0;
    for (const std::string& name : ckpt.names()) {
      if (name.rfind("unit", 0) == 0) values += ckpt.get(name).numel();
      if (name.rfind("optim.", 0) == 0 && name != "optim.step_count") {
        optim += ckpt.get(name).numel();
      }
    }
    for (int64_t numel : numels) {
      const gtl::nn::ShardLayout layout(numel, n);
      expected_values += layout.shard_size();
      expected_optim += 2 * layout.real_numel(r);
    }
    EXPECT_EQ(values, expected_values)
        << "rank " << r << ": the unit entries must be this rank's value shards (padding "
        << "included), not the full weights: a sharded checkpoint never gathers the model";
    EXPECT_EQ(optim, expected_optim)
        << "rank " << r << ": m and v of this rank's real shard elements, every tensor of "
        << "optimizer.state()";
    EXPECT_EQ(ckpt.get_int("optim.step_count"), 2) << "rank " << r << ": AdamW's step count";
  }
  std::filesystem::remove_all(dir);
}

TEST(ShardedCheckpoint, ResumesBitForBitWithTheSameWorldSize) {
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
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(bitwise_diff(second[r].weights, whole[r].weights), "")
          << "N " << n << ", rank " << r << ": 2 steps + save + load + 2 steps must equal 4 "
          << "steps bit for bit: restore the value shards AND AdamW's m, v and step count";
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
  EXPECT_THROW(testing::run(3, Stage::Zero3, resumed), gtl::Error)
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
  EXPECT_THROW(testing::run(2, Stage::Zero3, resumed), gtl::Error)
      << "rank 0 loading the file rank 1 saved: load_sharded must compare the file's rank (and "
         "world_size) with the communicator's and throw";
  std::filesystem::remove_all(dir);
}

TEST(ShardedCheckpoint, ConsolidatesIntoTheSingleProcessModelsParameters) {
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
    EXPECT_EQ(bitwise_diff(weights, run[0].weights), "")
        << "N " << n << ": the consolidated parameters must be the trained weights: chunk r of "
        << "each unit from rank r's file, padding dropped";
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace lab06
