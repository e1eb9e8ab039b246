// Lab 06, TODO 6: sharded checkpoints.
//
// Why: under ZeRO-3 no rank holds the whole model, and gathering it on rank 0 to save it would
// need exactly the memory sharding saved. Each rank writes the shards it owns, in parallel, and a
// resumed run with the same N reads them back into the same layout. A single-process consumer
// (evaluation, a trainer on one GPU) gets a full checkpoint from an offline consolidation that
// reads the N files one after another.
#include <string>

#include "gtl/io/checkpoint_file.h"
#include "gtl/runtime/error.h"
#include "sharded.h"

namespace lab06 {

std::string shard_file(const std::string& dir, int rank, int world_size) {
  return dir + "/shard-" + std::to_string(rank) + "-of-" + std::to_string(world_size) + ".ckpt";
}

void save_sharded(const std::string& dir, const Communicator& comm, const std::vector<Unit>& units,
                  const gtl::optim::AdamW& optimizer) {
  // SOLUTION(lab06) step 6a: this rank's shards and optimizer state, one file
  gtl::io::CheckpointFile ckpt;
  ckpt.put_int("world_size", comm.world_size());
  ckpt.put_int("rank", comm.rank());
  for (std::size_t u = 0; u < units.size(); ++u) {
    ckpt.put("unit" + std::to_string(u) + ".values", units[u].flat->shard_values());
  }
  for (const auto& [name, t] : optimizer.state()) ckpt.put("optim." + name, t);
  ckpt.put_int("optim.step_count", optimizer.step_count());
  ckpt.save(shard_file(dir, comm.rank(), comm.world_size()));
  // END SOLUTION(lab06)
}

void load_sharded(const std::string& dir, const Communicator& comm, std::vector<Unit>& units,
                  gtl::optim::AdamW& optimizer) {
  // SOLUTION(lab06) step 6a (load): the same file back, after checking its layout
  const std::string path = shard_file(dir, comm.rank(), comm.world_size());
  const gtl::io::CheckpointFile ckpt = gtl::io::CheckpointFile::load(path);
  GTL_CHECK(ckpt.get_int("world_size") == comm.world_size() && ckpt.get_int("rank") == comm.rank(),
            "load_sharded: " << path << " holds rank " << ckpt.get_int("rank") << " of "
                             << ckpt.get_int("world_size") << ", this is rank " << comm.rank()
                             << " of " << comm.world_size() << "; resume with the same N");
  for (std::size_t u = 0; u < units.size(); ++u) {
    Tensor shard = units[u].flat->shard_values();
    ckpt.get_into("unit" + std::to_string(u) + ".values", shard);
  }
  gtl::optim::NamedTensors saved;
  for (const auto& [name, t] : optimizer.state())
    saved.emplace_back(name, ckpt.get("optim." + name));
  optimizer.load_state(saved);
  optimizer.set_step_count(ckpt.get_int("optim.step_count"));
  // END SOLUTION(lab06)
}

void consolidate(const std::string& dir, int world_size, const gtl::nn::ModelConfig& config,
                 const std::string& path) {
  // SOLUTION(lab06) step 6b: every rank's chunk into full flat buffers, then one entry per
  // parameter
  std::unique_ptr<gtl::nn::Sequential> model = gtl::nn::make_model(config);
  std::vector<std::unique_ptr<gtl::nn::FlatParameter>> flats;
  for (std::size_t i = 0; i < model->size(); ++i) {
    if ((*model)[i].num_parameters() == 0) continue;
    flats.push_back(
        std::make_unique<gtl::nn::FlatParameter>((*model)[i], gtl::Device::cpu(), world_size, 0));
  }
  for (int r = 0; r < world_size; ++r) {
    const gtl::io::CheckpointFile shard =
        gtl::io::CheckpointFile::load(shard_file(dir, r, world_size));
    for (std::size_t u = 0; u < flats.size(); ++u) {
      Tensor chunk = flats[u]->full_values_chunk(r);
      shard.get_into("unit" + std::to_string(u) + ".values", chunk);
    }
  }
  gtl::io::CheckpointFile full;
  for (const ParamRef& p : model->parameters()) full.put("model." + p.name, p.value);
  full.save(path);
  // END SOLUTION(lab06)
}

}  // namespace lab06
