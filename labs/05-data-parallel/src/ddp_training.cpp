// Lab 05's training harness: see ddp_training.h.
#include "ddp_training.h"

#include <cmath>
#include <memory>
#include <sstream>

#include "gtl/data/data_loader.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl/io/result_file.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/optim/adamw.h"
#include "gtl/runtime/error.h"

namespace lab05 {

using gtl::Device;
namespace nn = gtl::nn;
namespace data = gtl::data;
namespace dist = gtl::dist;

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
  // A modest cluster, so that the lab model's backward and its gradients' all-reduce take
  // comparable times (on H100s this small model would be all latency): 1 TFLOP/s and 300 GB/s
  // per rank, one rank per node, nodes on 100 Gb/s Ethernet (12.5 GB/s, 10 us per message).
  dist::CostModel m;
  m.peak_flops = 1e12;
  m.mem_bandwidth = 300e9;
  m.inter_node = dist::Link{10e-6, 12.5e9};
  m.ranks_per_node = 1;
  return m;
}

namespace {

std::shared_ptr<const data::Dataset> lab_dataset(const TrainConfig& config) {
  return std::make_shared<data::SyntheticDigits>(config.dataset_size);
}

data::DataLoaderOptions loader_options(const TrainConfig& config, int rank, int world_size) {
  data::DataLoaderOptions o;
  o.device = config.device;
  o.batch_size = config.batch_per_rank;
  o.seed = config.data_seed;
  o.rank = rank;
  o.world_size = world_size;
  o.prefetch = 1;
  o.drop_last = true;  // every step has batch_per_rank samples on every rank
  return o;
}

data::Batch next_batch(data::DataLoader& loader) {
  std::optional<data::Batch> batch = loader.next();
  if (!batch) batch = loader.next();  // end of an epoch: start the next one
  GTL_CHECK(batch.has_value(), "lab05: the data set is smaller than one batch");
  batch->wait();  // GPU: this stream waits for the batch's copy
  return *batch;
}

// Forward and backward of one batch; the gradients overwrite the flat buffer. Returns the loss.
float forward_backward(nn::Module& model, const data::Batch& batch) {
  const nn::CrossEntropyLoss head;
  nn::Context ctx, loss_ctx;
  Tensor logits = model.forward(batch.images, ctx);
  Tensor loss = head.forward(logits, batch.labels, loss_ctx);
  model.backward(ctx, head.backward(loss_ctx), nn::GradMode::Overwrite);
  return loss.item();
}

gtl::optim::AdamWOptions adamw(const TrainConfig& config) {
  gtl::optim::AdamWOptions o;
  o.lr = config.lr;
  o.weight_decay = 0.f;
  return o;
}

}  // namespace

TrainResult train_lab_model(Communicator& comm, const TrainConfig& config,
                            const SyncFactory& make_sync) {
  std::unique_ptr<nn::Sequential> model = nn::make_model(config.model);
  nn::ParameterBuffer buffer(*model, config.device);
  gtl::optim::AdamW optimizer({buffer.flat_param()}, adamw(config));
  data::DataLoader loader(lab_dataset(config),
                          loader_options(config, comm.rank(), comm.world_size()));
  const std::function<void()> sync = make_sync(comm, *model, buffer);
  TrainResult result;
  for (int64_t step = 0; step < config.steps; ++step) {
    result.losses.push_back(forward_backward(*model, next_batch(loader)));
    sync();
    result.grads.push_back(buffer.grads().to(Device::cpu()).to_vector());
    optimizer.step();
  }
  result.weights = buffer.values().to(Device::cpu()).to_vector();
  return result;
}

TrainResult train_single_process(int world_size, const TrainConfig& config) {
  GTL_CHECK(config.device.is_cpu(), "train_single_process: the reference runs on the CPU");
  std::unique_ptr<nn::Sequential> model = nn::make_model(config.model);
  nn::ParameterBuffer buffer(*model, Device::cpu());
  gtl::optim::AdamW optimizer({buffer.flat_param()}, adamw(config));
  std::vector<std::unique_ptr<data::DataLoader>> loaders;
  for (int r = 0; r < world_size; ++r) {
    loaders.push_back(std::make_unique<data::DataLoader>(lab_dataset(config),
                                                         loader_options(config, r, world_size)));
  }
  TrainResult result;
  for (int64_t step = 0; step < config.steps; ++step) {
    Tensor acc;
    std::vector<float> abs(static_cast<std::size_t>(buffer.grads().numel()), 0.f);
    for (int r = 0; r < world_size; ++r) {
      const float loss = forward_backward(*model, next_batch(*loaders[r]));
      if (r == 0) result.losses.push_back(loss);
      if (r == 0) {
        acc = buffer.grads().clone();
      } else {
        dist::reduce_into(acc, buffer.grads(), dist::ReduceOp::Sum);  // acc += g_r, rank order
      }
      const std::vector<float> g = buffer.grads().to_vector();
      for (std::size_t i = 0; i < g.size(); ++i) abs[i] += std::fabs(g[i]) / float(world_size);
    }
    result.abs_grads.push_back(abs);
    dist::divide_(acc, world_size);
    Tensor(buffer.grads()).copy_(acc);
    result.grads.push_back(buffer.grads().to_vector());
    optimizer.step();
  }
  result.weights = buffer.values().to_vector();
  return result;
}

SyncFactory core_flat_sync() {
  return [](Communicator& comm, nn::Module&, nn::ParameterBuffer& buffer) {
    return [&comm, &buffer] { comm.all_reduce(buffer.grads(), dist::ReduceOp::Avg); };
  };
}

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

}  // namespace lab05
