// TODO 1's harness (op_profiler.h): NestedNet, a network with containers inside containers, the
// model the profiler checks run, and format_table, the text form of a key_averages table.
#include <cstdio>
#include <string>

#include "gtl/nn/activation.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/residual_mlp.h"
#include "op_profiler.h"

namespace lab09 {

NestedNet::NestedNet(const NestedNetConfig& config, gtl::Device device) : config_(config) {
  gtl::Generator gen(config.seed);
  model_ = std::make_unique<gtl::nn::Sequential>();
  model_->add(std::make_unique<gtl::nn::Linear>(config.in, config.hidden, gen));
  auto middle = std::make_unique<gtl::nn::Sequential>();
  middle->add(std::make_unique<gtl::nn::ReLU>());
  auto inner = std::make_unique<gtl::nn::Sequential>();
  inner->add(std::make_unique<gtl::nn::Linear>(config.hidden, config.hidden, gen));
  inner->add(std::make_unique<gtl::nn::GELU>());
  inner->add(std::make_unique<gtl::nn::ResidualMLP>(config.hidden, gen, 2));
  middle->add(std::move(inner));
  model_->add(std::move(middle));
  model_->add(std::make_unique<gtl::nn::Linear>(config.hidden, config.out, gen));
  buffer_ = std::make_unique<gtl::nn::ParameterBuffer>(*model_, device);
  for (int64_t b = 0; b < config.batches; ++b)
    x_.push_back(gtl::Tensor::normal({config.batch, config.in}, gen).to(device));
  dy_ = gtl::Tensor::ones({config.batch, config.out}, gtl::DType::Float32, device);
}

void NestedNet::step(int64_t i) {
  gtl::nn::Context ctx;
  const gtl::Tensor y = model_->forward(x_[static_cast<size_t>(i % config_.batches)], ctx);
  (void)y;
  (void)model_->backward(ctx, dy_);
}

std::string format_table(const std::vector<OpRow>& rows) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "%-24s %6s %12s %12s %12s %12s %9s\n", "op", "calls", "total us",
                "MFLOP", "MB", "allocated", "launches");
  out += line;
  for (const OpRow& r : rows) {
    std::snprintf(line, sizeof line, "%-24s %6lld %12.1f %12.3f %12.3f %12lld %9lld\n",
                  r.key.c_str(), static_cast<long long>(r.calls), r.total_us, r.flops / 1e6,
                  r.bytes / 1e6, static_cast<long long>(r.allocated_bytes),
                  static_cast<long long>(r.launches));
    out += line;
  }
  return out;
}

}  // namespace lab09
