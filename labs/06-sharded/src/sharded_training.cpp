// Lab 06's training harness: see sharded_training.h.
#include "sharded_training.h"

#include <memory>
#include <optional>
#include <string>

#include "gtl/data/data_loader.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl/io/result_file.h"
#include "gtl/memory/allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/optim/adamw.h"
#include "gtl/runtime/error.h"
#include "lab06_student_call.h"  // tests/: the runtime guard's scopes of the TODOs called here

namespace lab06 {

using gtl::Device;
namespace nn = gtl::nn;
namespace data = gtl::data;
namespace dist = gtl::dist;

const char* stage_name(Stage stage) {
  switch (stage) {
    case Stage::Ddp:
      return "DDP";
    case Stage::Zero1:
      return "ZeRO-1";
    case Stage::Zero2:
      return "ZeRO-2";
    case Stage::Zero3:
      return "ZeRO-3";
  }
  return "?";
}

nn::ModelConfig lab_model() {
  nn::ModelConfig c;
  c.hidden = 32;
  c.blocks = 2;
  c.seed = 5;
  return c;
}

nn::ModelConfig reference_model() {
  nn::ModelConfig c;
  c.hidden = 128;
  c.blocks = 4;
  c.seed = 5;
  return c;
}

dist::CostModel reference_cluster() {
  // Lab 05's cluster: compute and communication of the same order for this small model.
  dist::CostModel m;
  m.peak_flops = 1e12;
  m.mem_bandwidth = 300e9;
  m.inter_node = dist::Link{10e-6, 12.5e9};
  m.ranks_per_node = 1;
  return m;
}

std::vector<Unit> make_units(nn::Sequential& model, const Communicator& comm, Device device,
                             UnitBuffers buffers) {
  std::vector<Unit> units;
  for (std::size_t i = 0; i < model.size(); ++i) {
    nn::Module& child = model[i];
    if (child.num_parameters() == 0) continue;
    units.push_back(Unit{&child, std::make_unique<nn::FlatParameter>(
                                     child, device, comm.world_size(), comm.rank())});
    if (buffers == UnitBuffers::ShardsOnly) {
      units.back().flat->release_values();
      units.back().flat->release_grads();
    }
  }
  return units;
}

int64_t expected_persistent_bytes(Stage stage, const std::vector<int64_t>& numels, int world_size,
                                  int rank) {
  int64_t bytes = 0;
  for (int64_t numel : numels) {
    const nn::ShardLayout layout(numel, world_size);
    const int64_t full = 4 * layout.padded_numel(), shard = 4 * layout.shard_size();
    const int64_t adam = 8 * layout.real_numel(rank);  // m and v of the real elements
    switch (stage) {
      case Stage::Ddp:
        GTL_CHECK(false, "expected_persistent_bytes: DDP has no ZeRO formula");
        break;
      case Stage::Zero1:  // full values, the values' shard (the optimizer's), full gradients
        bytes += full + shard + full + adam;
        break;
      case Stage::Zero2:  // full values, the values' shard, the gradients' shard
        bytes += full + shard + shard + adam;
        break;
      case Stage::Zero3:  // the shards only
        bytes += shard + shard + adam;
        break;
    }
  }
  return bytes;
}

namespace {

// Every batch this rank takes, on config.device, loaded before the model exists (so the allocator's
// bytes after that point are the model's, its gradients', the optimizer's and the step's). On a
// GPU each batch is copied on this rank's stream, which orders the copy before the step reads it.
std::vector<data::Batch> load_batches(const Communicator& comm, const TrainConfig& config) {
  data::DataLoaderOptions o;
  o.batch_size = config.batch_per_rank;
  o.seed = config.data_seed;
  o.rank = comm.rank();
  o.world_size = comm.world_size();
  o.prefetch = 1;
  o.drop_last = true;
  data::DataLoader loader(std::make_shared<data::SyntheticDigits>(config.dataset_size), o);
  std::vector<data::Batch> batches;
  while (static_cast<int64_t>(batches.size()) < config.steps) {
    std::optional<data::Batch> batch = loader.next();
    if (!batch) batch = loader.next();  // end of an epoch: start the next one
    GTL_CHECK(batch.has_value(), "lab06: the data set is smaller than one batch");
    if (!config.device.is_cpu()) {
      batch->images = batch->images.to(config.device);
      batch->labels = batch->labels.to(config.device);
    }
    batches.push_back(*batch);
  }
  return batches;
}

gtl::optim::AdamWOptions adamw(const TrainConfig& config) {
  gtl::optim::AdamWOptions o;
  o.lr = config.lr;
  o.weight_decay = 0.f;
  return o;
}

std::vector<float> model_weights(const nn::Module& model) {
  std::vector<float> w;
  for (const ParamRef& p : model.parameters()) {
    const std::vector<float> v = p.value.to_vector();
    w.insert(w.end(), v.begin(), v.end());
  }
  return w;
}

// One stage's sync, built around the model: what runs before backward, after backward, and the
// optimizer step. Every call into a student TODO holds that TODO's scope (lab06_student_call.h);
// no ZeRO stage's harness code calls a reference they forbid, and all ranks run the same stage.
struct StageRun {
  std::unique_ptr<nn::ParameterBuffer> buffer;  // Ddp
  std::unique_ptr<nn::FlatParameter> flat;      // Zero1, Zero2
  std::vector<Unit> units;                      // Zero3
  std::unique_ptr<Zero1> zero1;
  std::unique_ptr<Zero2> zero2;
  std::unique_ptr<Fsdp> fsdp;
  std::unique_ptr<gtl::optim::AdamW> optimizer;  // Ddp, Zero3

  void before_backward() {
    if (zero2) {
      const auto call = lab06_student_call::todo3();
      zero2->before_backward();
    }
  }
  void after_backward(Communicator& comm) {
    if (buffer) comm.all_reduce(buffer->grads(), dist::ReduceOp::Avg);
    if (zero1) {
      const auto call = lab06_student_call::todo2();
      zero1->after_backward();
    }
    if (zero2) {
      const auto call = lab06_student_call::todo3();
      zero2->after_backward();
    }
  }
  void step() {
    if (optimizer) optimizer->step();
    if (zero1) {
      const auto call = lab06_student_call::todo2();
      zero1->step();
    }
    if (zero2) {
      const auto call = lab06_student_call::todo3();
      zero2->step();
    }
  }
};

StageRun make_stage_run(Communicator& comm, Stage stage, nn::Sequential& model,
                        const TrainConfig& config) {
  StageRun run;
  const int n = comm.world_size(), r = comm.rank();
  switch (stage) {
    case Stage::Ddp:
      run.buffer = std::make_unique<nn::ParameterBuffer>(model, config.device);
      run.optimizer = std::make_unique<gtl::optim::AdamW>(
          std::vector<ParamRef>{run.buffer->flat_param()}, adamw(config));
      break;
    case Stage::Zero1:
    case Stage::Zero2: {
      nn::FlatParameter::Options o;
      o.shard_grads = stage == Stage::Zero2;
      run.flat = std::make_unique<nn::FlatParameter>(model, config.device, n, r, o);
      if (stage == Stage::Zero1) {
        const auto call = lab06_student_call::todo2();
        run.zero1 = std::make_unique<Zero1>(comm, *run.flat, adamw(config));
      } else {
        const auto call = lab06_student_call::todo3();
        run.zero2 = std::make_unique<Zero2>(comm, *run.flat, adamw(config));
      }
      break;
    }
    case Stage::Zero3:
      run.units = make_units(model, comm, config.device);
      {
        const auto call = lab06_student_call::todo4();
        run.fsdp = std::make_unique<Fsdp>(comm, model, run.units, config.prefetch);
      }
      run.optimizer = std::make_unique<gtl::optim::AdamW>(run.fsdp->shard_params(), adamw(config));
      break;
  }
  return run;
}

// fn() inside TODO 4's scope when `scoped` (a ZeRO-3 run, whose model hooks call the student's
// Fsdp), plainly otherwise.
template <typename Fn>
auto in_scope_if(bool scoped, Fn fn) {
  if (!scoped) return fn();
  const auto call = lab06_student_call::todo4();
  return fn();
}

// The full weights at the end of a Zero3 run: each unit gathered once more (the harness's own
// collectives, after the counted step).
std::vector<float> gathered_weights(Communicator& comm, nn::Module& model,
                                    const std::vector<Unit>& units) {
  for (const Unit& u : units) {
    u.flat->materialize_values();
    comm.all_gather(u.flat->shard_values(), u.flat->values());
  }
  std::vector<float> w = model_weights(model);
  for (const Unit& u : units) u.flat->release_values();
  return w;
}

}  // namespace

TrainResult train(Communicator& comm, Stage stage, const TrainConfig& config) {
  const std::vector<data::Batch> batches = load_batches(comm, config);
  const std::shared_ptr<gtl::Allocator> allocator = gtl::current_allocator(config.device);
  const int64_t baseline = allocator->stats().allocated_bytes;
  std::unique_ptr<nn::Sequential> model = nn::make_model(config.model);
  StageRun run = make_stage_run(comm, stage, *model, config);
  const nn::CrossEntropyLoss head;
  GTL_CHECK((config.save_after_steps == 0 && config.resume_at_step == 0) || stage == Stage::Zero3,
            "lab06: sharded checkpoints are ZeRO-3's");
  if (config.resume_at_step > 0) {
    const auto call = lab06_student_call::todo6_in_training();
    load_sharded(config.checkpoint_dir, comm, run.units, *run.optimizer);
  }
  TrainResult result;
  const gtl::EventLogScope stop_log(*allocator);  // started at the last step, below
  for (int64_t step = config.resume_at_step; step < config.steps; ++step) {
    if (step + 1 == config.steps) {  // the last step is measured
      comm.reset_counters();
      allocator->reset_peak_stats();
      result.step_start_bytes = allocator->stats().allocated_bytes - baseline;
      allocator->record_events(&result.step_events);
    }
    const data::Batch& batch = batches[static_cast<std::size_t>(step)];
    nn::Context ctx, loss_ctx;
    // ZeRO-3: the model's hooks call the student's Fsdp (TODOs 4 and 5) in forward and backward.
    const bool fsdp = run.fsdp != nullptr;
    Tensor logits = in_scope_if(fsdp, [&] { return model->forward(batch.images, ctx); });
    Tensor loss = head.forward(logits, batch.labels, loss_ctx);
    result.losses.push_back(loss.item());
    run.before_backward();
    const Tensor grad_logits = head.backward(loss_ctx);
    in_scope_if(fsdp, [&] { model->backward(ctx, grad_logits, nn::GradMode::Overwrite); });
    run.after_backward(comm);
    run.step();
    if (step + 1 == config.save_after_steps) {
      const auto call = lab06_student_call::todo6_in_training();
      save_sharded(config.checkpoint_dir, comm, run.units, *run.optimizer);
    }
  }
  result.persistent_bytes = allocator->stats().allocated_bytes - baseline;
  result.peak_bytes = allocator->stats().peak_allocated_bytes - baseline;
  allocator->record_events(nullptr);
  result.step_counters = comm.counters();
  result.weights =
      stage == Stage::Zero3 ? gathered_weights(comm, *model, run.units) : model_weights(*model);
  return result;
}

}  // namespace lab06

namespace lab06 {
// The result file's layout (backend, world size, weights, losses) is io::ResultFileWriter's.
void write_result(const std::string& path, const TrainResult& result, const std::string& backend,
                  int world_size) {
  gtl::io::ResultFileWriter out(path, backend, world_size);
  out.put_floats("weights", result.weights);
  out.put_floats("losses", result.losses);
  out.close();
}

ResultFile read_result(const std::string& path) {
  gtl::io::ResultFileReader in(path);
  ResultFile f;
  f.backend = in.backend();
  f.world_size = in.world_size();
  f.result.weights = in.floats("weights");
  f.result.losses = in.floats("losses");
  return f;
}

}  // namespace lab06
