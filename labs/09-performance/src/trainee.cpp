// The lab's trainee (performance.h): a small mlp classifier, its SGD and its batches, all on one
// device. Its step reads nothing on the host, so every host synchronisation of a loop around it is
// the loop's own.
#include <string>

#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/models.h"
#include "performance.h"

namespace lab09 {

Trainee::Trainee(const TraineeConfig& config, gtl::Device device)
    : config_(config), device_(device) {
  GTL_CHECK(config.batches > 0 && config.batch > 0,
            "Trainee: " << config.batches << " batches of " << config.batch << " samples");
  gtl::nn::ModelConfig c;
  c.kind = "mlp";
  c.input = {1, config.side, config.side};
  c.classes = config.classes;
  c.hidden = config.hidden;
  c.blocks = config.blocks;
  c.seed = config.model_seed;
  model_ = gtl::nn::make_model(c);
  buffer_ = std::make_unique<gtl::nn::ParameterBuffer>(*model_, device);
  sgd_ = std::make_unique<gtl::optim::Sgd>(model_->parameters(),
                                           gtl::optim::SgdOptions{.lr = config.lr});
  gtl::Generator gen(config.data_seed);
  for (int64_t b = 0; b < config.batches; ++b) {
    x_.push_back(gtl::Tensor::normal({config.batch, 1, config.side, config.side}, gen).to(device));
    std::vector<float> labels;
    for (int64_t i = 0; i < config.batch; ++i)
      labels.push_back(static_cast<float>((config.data_seed + 7 * b + 3 * i) % config.classes));
    labels_.push_back(
        gtl::Tensor::from_vector(labels, {config.batch}).to(gtl::DType::Int64).to(device));
  }
}

gtl::Tensor Trainee::step(const gtl::Tensor& x, const gtl::Tensor& labels) {
  gtl::nn::Context ctx, loss_ctx;
  const gtl::nn::CrossEntropyLoss ce;
  gtl::Tensor loss = ce.forward(model_->forward(x, ctx), labels, loss_ctx);
  model_->backward(ctx, ce.backward(loss_ctx));
  sgd_->step();
  return loss;
}

const gtl::Tensor& Trainee::x(int64_t i) const {
  return x_[static_cast<size_t>(i % config_.batches)];
}

const gtl::Tensor& Trainee::labels(int64_t i) const {
  return labels_[static_cast<size_t>(i % config_.batches)];
}

}  // namespace lab09
