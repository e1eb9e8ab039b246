// Sampling with temperature and top-k over a KV-cached GPT (see generate.h).
#include "gtl/nn/generate.h"

#include <algorithm>
#include <cmath>

namespace gtl::nn {

int64_t sample_token(const std::vector<float>& logits, const SamplingOptions& options, double u) {
  GTL_CHECK(!logits.empty(), "sample_token: no logits");
  const auto best = std::max_element(logits.begin(), logits.end());
  if (options.temperature <= 0.f) return best - logits.begin();
  const auto v = static_cast<int64_t>(logits.size());
  float threshold = -INFINITY;  // logits below it are dropped (top-k)
  if (options.top_k > 0 && options.top_k < v) {
    std::vector<float> sorted = logits;
    std::nth_element(sorted.begin(), sorted.begin() + (options.top_k - 1), sorted.end(),
                     std::greater<float>());
    threshold = sorted[static_cast<std::size_t>(options.top_k - 1)];
  }
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] < threshold) continue;
    // Subtract the max before exp (softmax.h): exp(0) = 1 is the largest term, nothing overflows.
    p[i] = std::exp(static_cast<double>(logits[i] - *best) / options.temperature);
    sum += p[i];
  }
  double acc = 0.0;
  const double target = u * sum;
  for (std::size_t i = 0; i < p.size(); ++i) {
    acc += p[i];
    if (p[i] > 0.0 && target < acc) return static_cast<int64_t>(i);
  }
  return best - logits.begin();  // u * sum rounded up to the total: the likeliest token
}

std::vector<int64_t> generate(GPT& model, const std::vector<int64_t>& prompt, int64_t max_new,
                              const SamplingOptions& options, Device device) {
  GTL_CHECK(!prompt.empty(), "generate: the prompt is empty");
  const int64_t context = model.config().context;
  const auto p = static_cast<int64_t>(prompt.size());
  GTL_CHECK(p <= context,
            "generate: a prompt of " << p << " tokens exceeds the context of " << context);
  const int64_t total = std::min(context, p + std::max<int64_t>(max_new, 0));
  KVCache cache = model.make_cache(1, total, device);
  std::vector<int64_t> out = prompt;
  auto ids_tensor = [&](const std::vector<int64_t>& ids) {
    Tensor t = Tensor::empty({1, static_cast<int64_t>(ids.size())}, DType::Int64);
    std::copy(ids.begin(), ids.end(), t.data<int64_t>());
    return t.to(device);
  };
  Tensor logits = model.forward_cached(ids_tensor(prompt), cache);  // [p, V]
  Generator gen(options.seed);
  for (int64_t i = p; i < total; ++i) {
    const int64_t rows = logits.size(0);
    const std::vector<float> last = logits.slice(rows - 1, rows).to_vector();
    const double u = Tensor::uniform({1}, gen).item();
    out.push_back(sample_token(last, options, u));
    if (i + 1 < total) logits = model.forward_cached(ids_tensor({out.back()}), cache);
  }
  return out;
}

}  // namespace gtl::nn
