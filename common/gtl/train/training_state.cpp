// Trainer::save / Trainer::load: the full training state in one io::CheckpointFile (see trainer.h).
//
// Entries: "config.*" (what must match to resume), "model.<parameter>" (float32 masters; the
// half compute copy is derived from them), "optim.<state>" + "optim.step_count" (AdamW's moments
// and its bias-correction step), "scaler.*" (fp16 loss scale and its growth counter), "data.*"
// (the loader's epoch and batch: with the seed in config, the exact batches still to come) and
// "trainer.step". With ranks every rank holds the same state (bitwise equal weights and moments,
// the same loader position in its own shard), so rank 0 saves and every rank loads that file;
// "config.world_size" must match, since the shards depend on it.
#include "gtl/io/checkpoint_file.h"
#include "gtl/train/trainer.h"

namespace gtl::train {

namespace {
void check_same(const io::CheckpointFile& ckpt, const std::string& key, int64_t expected) {
  const int64_t saved = ckpt.get_int(key);
  GTL_CHECK(saved == expected, "Trainer::load: the checkpoint was written with "
                                   << key << " = " << saved << ", this trainer has " << expected
                                   << "; resume with the same options");
}
void check_same(const io::CheckpointFile& ckpt, const std::string& key,
                const std::string& expected) {
  const std::string saved = ckpt.get_string(key);
  GTL_CHECK(saved == expected, "Trainer::load: the checkpoint was written with "
                                   << key << " = " << saved << ", this trainer has " << expected
                                   << "; resume with the same options");
}
}  // namespace

void Trainer::save(const std::string& path) const {
  io::CheckpointFile ckpt;
  ckpt.put_string("config.model", options_.model.kind);
  ckpt.put_int("config.hidden", options_.model.hidden);
  ckpt.put_int("config.blocks", options_.model.blocks);
  ckpt.put_string("config.precision", options_.precision.name());
  ckpt.put_int("config.batch_size", options_.batch_size);
  ckpt.put_int("config.micro_batches", options_.micro_batches);
  ckpt.put_int("config.world_size", options_.world_size);
  ckpt.put_int("config.seed", static_cast<int64_t>(options_.seed));
  for (const optim::ParamRef& p : buffer_->params()) ckpt.put("model." + p.name, p.value);
  for (const auto& [name, t] : optimizer_->state()) ckpt.put("optim." + name, t);
  ckpt.put_int("optim.step_count", optimizer_->step_count());
  const optim::LossScalerState s = scaler_.state();
  ckpt.put_double("scaler.scale", s.scale);  // a float, exact in a double
  ckpt.put_int("scaler.growth_tracker", s.growth_tracker);
  const data::LoaderPosition pos = loader_->position();
  ckpt.put_int("data.epoch", pos.epoch);
  ckpt.put_int("data.batch", pos.batch);
  ckpt.put_int("trainer.step", steps_);
  ckpt.save(path);
}

void Trainer::load_weights(const std::string& path) {
  const io::CheckpointFile ckpt = io::CheckpointFile::load(path);
  for (const optim::ParamRef& p : buffer_->params()) {
    GTL_CHECK(ckpt.has("model." + p.name),
              "Trainer::load_weights: " << path << " has no entry model." << p.name);
    Tensor value = p.value;  // a view into the flat buffer: get_into writes the model's weights
    ckpt.get_into("model." + p.name, value);
  }
  buffer_->refresh_compute();
}

void Trainer::load(const std::string& path) {
  const io::CheckpointFile ckpt = io::CheckpointFile::load(path);
  check_same(ckpt, "config.model", options_.model.kind);
  check_same(ckpt, "config.hidden", options_.model.hidden);
  check_same(ckpt, "config.blocks", options_.model.blocks);
  check_same(ckpt, "config.precision", options_.precision.name());
  check_same(ckpt, "config.batch_size", options_.batch_size);
  check_same(ckpt, "config.micro_batches", options_.micro_batches);
  check_same(ckpt, "config.world_size", options_.world_size);
  check_same(ckpt, "config.seed", static_cast<int64_t>(options_.seed));
  for (const optim::ParamRef& p : buffer_->params()) {
    Tensor value = p.value;  // a view into the flat buffer: get_into writes the model's weights
    ckpt.get_into("model." + p.name, value);
  }
  buffer_->refresh_compute();
  optim::NamedTensors saved;
  for (const auto& [name, t] : optimizer_->state()) {
    saved.emplace_back(name, ckpt.get("optim." + name));
  }
  optimizer_->load_state(saved);
  optimizer_->set_step_count(ckpt.get_int("optim.step_count"));
  optim::LossScalerState s;
  s.scale = static_cast<float>(ckpt.get_double("scaler.scale"));
  s.growth_tracker = ckpt.get_int("scaler.growth_tracker");
  scaler_.load_state(s);
  loader_->restore({ckpt.get_int("data.epoch"), ckpt.get_int("data.batch")});
  steps_ = ckpt.get_int("trainer.step");
}

}  // namespace gtl::train
