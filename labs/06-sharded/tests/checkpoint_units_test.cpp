// TODO 6 on its own: save_sharded, load_sharded and consolidate checked on units the test builds
// itself (make_units of the lab model, every shard filled with a known value per element, an
// AdamW whose m, v and step count the test sets), so no training and no Fsdp (TODO 4) runs. The
// values encode (unit, element of the unit's flat buffer), so a chunk read from the wrong rank,
// the wrong unit or the wrong offset shows in the first element that differs.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gtl/io/checkpoint_file.h"
#include "lab06_test_util.h"

namespace lab06 {
namespace {

using testing::bitwise_diff;

std::string temp_dir(const std::string& name) {
  const std::string dir = "/tmp/lab06_ckunits_" + std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The known value of element i of unit u's flat buffer (exact in float: below 2^24); 0 for padding.
float known_value(std::size_t u, int64_t i, int64_t numel) {
  return i < numel ? static_cast<float>(100000 * (u + 1) + i) : 0.0f;
}

// Every unit's shard of this rank filled with known_value at its global offset.
void fill_shards(std::vector<Unit>& units) {
  for (std::size_t u = 0; u < units.size(); ++u) {
    const gtl::nn::FlatParameter& flat = *units[u].flat;
    const int64_t offset = flat.layout().shard_offset(flat.rank());
    std::vector<float> v(static_cast<std::size_t>(flat.shard_size()));
    for (std::size_t j = 0; j < v.size(); ++j) {
      v[j] = known_value(u, offset + static_cast<int64_t>(j), flat.numel());
    }
    Tensor shard = flat.shard_values();
    shard.copy_(Tensor::from_vector(v, shard.shape()));
  }
}

// An AdamW over the rank's shard params whose m and v hold values that depend on the rank, the
// tensor and the element (v positive, as a real second moment), at step `steps`.
std::unique_ptr<gtl::optim::AdamW> filled_optimizer(const std::vector<Unit>& units, int rank,
                                                    int64_t steps) {
  std::vector<ParamRef> params;
  for (const Unit& u : units) {
    if (std::optional<ParamRef> p = u.flat->shard_param()) params.push_back(*p);
  }
  auto optimizer = std::make_unique<gtl::optim::AdamW>(params);
  gtl::optim::NamedTensors state = optimizer->state();
  for (std::size_t k = 0; k < state.size(); ++k) {
    std::vector<float> v(static_cast<std::size_t>(state[k].second.numel()));
    for (std::size_t j = 0; j < v.size(); ++j) {
      v[j] = 0.5f + static_cast<float>(rank) + 0.25f * static_cast<float>(k) +
             static_cast<float>(j) / 1024.0f;
    }
    state[k].second = Tensor::from_vector(v, state[k].second.shape());
  }
  optimizer->load_state(state);
  optimizer->set_step_count(steps);
  return optimizer;
}

std::vector<float> values_of(const Tensor& t) {
  return t.to_vector();
}

TEST(ShardedCheckpointUnits, SaveThenLoadRestoresShardsAndOptimizerStateBitwise) {
  for (int n : {2, 3, 5}) {
    const std::string dir = temp_dir("roundtrip" + std::to_string(n));
    gtl::dist::run_ranks(
        n,
        [&](Communicator& comm) {
          auto saved_model = gtl::nn::make_model(lab_model());
          std::vector<Unit> saved_units = make_units(*saved_model, comm);
          fill_shards(saved_units);
          auto saved_opt = filled_optimizer(saved_units, comm.rank(), 7);
          save_sharded(dir, comm, saved_units, *saved_opt);
          comm.barrier();

          // A fresh process of the same rank: the model as initialised, a new AdamW at step 0.
          auto model = gtl::nn::make_model(lab_model());
          std::vector<Unit> units = make_units(*model, comm);
          std::vector<ParamRef> params;
          for (const Unit& u : units) {
            if (std::optional<ParamRef> p = u.flat->shard_param()) params.push_back(*p);
          }
          gtl::optim::AdamW optimizer(params);
          load_sharded(dir, comm, units, optimizer);
          for (std::size_t u = 0; u < units.size(); ++u) {
            EXPECT_EQ(bitwise_diff(values_of(units[u].flat->shard_values()),
                                   values_of(saved_units[u].flat->shard_values())),
                      "")
                << "N " << n << ", rank " << comm.rank() << ", unit " << u
                << ": load_sharded must put the saved value shard (padding included) back into "
                   "the unit's shard_values()";
          }
          const gtl::optim::NamedTensors got = optimizer.state(), want = saved_opt->state();
          ASSERT_EQ(got.size(), want.size());
          for (std::size_t k = 0; k < got.size(); ++k) {
            EXPECT_EQ(bitwise_diff(values_of(got[k].second), values_of(want[k].second)), "")
                << "N " << n << ", rank " << comm.rank() << ", " << want[k].first
                << ": every tensor of optimizer.state() (m and v) must be saved and restored";
          }
          EXPECT_EQ(optimizer.step_count(), 7)
              << "N " << n << ", rank " << comm.rank()
              << ": AdamW's step count (its bias correction) must be restored";
        },
        testing::fast());
    std::filesystem::remove_all(dir);
  }
}

TEST(ShardedCheckpointUnits, EachFileHoldsOnlyItsRanksShardsAndLayout) {
  const int n = 3;
  const std::string dir = temp_dir("layout");
  gtl::dist::run_ranks(
      n,
      [&](Communicator& comm) {
        auto model = gtl::nn::make_model(lab_model());
        std::vector<Unit> units = make_units(*model, comm);
        fill_shards(units);
        auto optimizer = filled_optimizer(units, comm.rank(), 3);
        save_sharded(dir, comm, units, *optimizer);
      },
      testing::fast());
  const std::vector<int64_t> numels = testing::unit_numels(lab_model());
  for (int r = 0; r < n; ++r) {
    const gtl::io::CheckpointFile ckpt = gtl::io::CheckpointFile::load(shard_file(dir, r, n));
    EXPECT_EQ(ckpt.get_int("world_size"), n) << "rank " << r << ": the file's world_size entry";
    EXPECT_EQ(ckpt.get_int("rank"), r) << "rank " << r << ": the file's rank entry";
    for (std::size_t u = 0; u < numels.size(); ++u) {
      const std::string name = "unit" + std::to_string(u) + ".values";
      ASSERT_TRUE(ckpt.has(name)) << "rank " << r << ": no entry " << name;
      const gtl::nn::ShardLayout layout(numels[u], n);
      std::vector<float> want(static_cast<std::size_t>(layout.shard_size()));
      for (std::size_t j = 0; j < want.size(); ++j) {
        want[j] = known_value(u, layout.shard_offset(r) + static_cast<int64_t>(j), numels[u]);
      }
      EXPECT_EQ(bitwise_diff(ckpt.get(name).to_vector(), want), "")
          << "rank " << r << ", " << name << ": this rank's value shard (its padding included), "
          << "not the full unit and not another rank's chunk";
    }
  }
  std::filesystem::remove_all(dir);
}

TEST(ShardedCheckpointUnits, ConsolidatesKnownShardsIntoEveryParameter) {
  for (int n : {2, 5}) {
    const std::string dir = temp_dir("consolidate" + std::to_string(n));
    gtl::dist::run_ranks(
        n,
        [&](Communicator& comm) {
          auto model = gtl::nn::make_model(lab_model());
          std::vector<Unit> units = make_units(*model, comm);
          fill_shards(units);
          auto optimizer = filled_optimizer(units, comm.rank(), 1);
          save_sharded(dir, comm, units, *optimizer);
        },
        testing::fast());
    const std::string path = dir + "/full.ckpt";
    consolidate(dir, n, lab_model(), path);
    const gtl::io::CheckpointFile full = gtl::io::CheckpointFile::load(path);
    // Parameters in model order walk the units in order, each unit's flat buffer from element 0.
    const std::vector<int64_t> numels = testing::unit_numels(lab_model());
    std::size_t u = 0;
    int64_t i = 0;
    for (const ParamRef& p : gtl::nn::make_model(lab_model())->parameters()) {
      if (i == numels[u]) ++u, i = 0;
      ASSERT_TRUE(full.has("model." + p.name))
          << "N " << n << ": no entry model." << p.name << " (Trainer::save's name for it)";
      const Tensor t = full.get("model." + p.name);
      ASSERT_EQ(t.shape(), p.value.shape()) << "N " << n << ": shape of model." << p.name;
      std::vector<float> want(static_cast<std::size_t>(p.value.numel()));
      for (float& w : want) w = known_value(u, i++, numels[u]);
      EXPECT_EQ(bitwise_diff(t.to_vector(), want), "")
          << "N " << n << ", model." << p.name << " (unit " << u << "): chunk r of each unit "
          << "from rank r's file, in rank order, padding dropped";
    }
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace lab06
