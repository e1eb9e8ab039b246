// TODO 6's harness (performance.h): the classifier head and the slow evaluation step TODO 6 makes
// fast. The step is correct, and slow in the ways a profile of it shows (TODO 6).
#include <string>

#include "gtl/ops/activations.h"
#include "gtl/ops/cross_entropy.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/matmul.h"
#include "performance.h"

namespace lab09 {

Head::Head(const HeadConfig& config, gtl::Device device) : config_(config), device_(device) {
  GTL_CHECK(config.in > 0 && config.hidden > 0 && config.classes > 0 && config.batch > 0 &&
                config.batches > 0,
            "Head: " << config.in << " inputs, " << config.hidden << " hidden, " << config.classes
                     << " classes, " << config.batches << " batches of " << config.batch);
  gtl::Generator gen(config.seed);
  const float s1 = 1.f / static_cast<float>(config.in),
              s2 = 1.f / static_cast<float>(config.hidden);
  w1_ = gtl::Tensor::normal({config.in, config.hidden}, gen, 0.f, s1).to(device);
  b1_ = gtl::Tensor::normal({config.hidden}, gen, 0.f, 0.5f).to(device);
  w2_ = gtl::Tensor::normal({config.hidden, config.classes}, gen, 0.f, s2).to(device);
  b2_ = gtl::Tensor::normal({config.classes}, gen, 0.f, 0.5f).to(device);
  for (int64_t b = 0; b < config.batches; ++b) {
    x_.push_back(gtl::Tensor::normal({config.batch, config.in}, gen).to(device));
    std::vector<float> labels;
    for (int64_t i = 0; i < config.batch; ++i)
      labels.push_back(static_cast<float>((config.seed + 5 * b + 3 * i) % config.classes));
    labels_.push_back(
        gtl::Tensor::from_vector(labels, {config.batch}).to(gtl::DType::Int64).to(device));
  }
}

const gtl::Tensor& Head::x(int64_t i) const {
  return x_[static_cast<size_t>(i % config_.batches)];
}

const gtl::Tensor& Head::labels(int64_t i) const {
  return labels_[static_cast<size_t>(i % config_.batches)];
}

namespace {

// bias[c] added to every row of x [rows, C], one row (one kernel launch) at a time.
void add_bias_row_by_row(const gtl::Tensor& x, const gtl::Tensor& bias) {
  const gtl::Tensor row_bias = bias.reshape({1, bias.shape()[0]});
  for (int64_t r = 0; r < x.shape()[0]; ++r) gtl::ops::add_(x.slice(r, r + 1), row_bias);
}

}  // namespace

float slow_eval_step(const Head& head, const gtl::Tensor& x, const gtl::Tensor& labels) {
  gtl::Tensor xb = gtl::Tensor::empty(x.shape(), gtl::DType::Float32, head.device());
  gtl::Tensor lb = gtl::Tensor::empty(labels.shape(), gtl::DType::Int64, head.device());
  xb.copy_(x);  // a blocking copy: the host waits for it
  lb.copy_(labels);
  const gtl::Tensor h = gtl::ops::matmul(xb, head.w1());
  add_bias_row_by_row(h, head.b1());
  const gtl::Tensor a = gtl::ops::gelu(h);
  const gtl::Tensor logits = gtl::ops::matmul(a, head.w2());
  add_bias_row_by_row(logits, head.b2());
  return gtl::ops::cross_entropy(logits, lb).item();  // the host waits for the whole step
}

}  // namespace lab09
