// A naive float64 GPT written for the tests, independent of the core's layers and ops: loops
// over std::vector<double>, the same equations (pre-LN blocks, causal attention, tanh GELU,
// LayerNorm eps 1e-5, tied or untied head, mean cross-entropy).
#pragma once

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gtl/nn/gpt.h"

namespace gtl::testing::ref {

inline std::vector<double> to_double(const Tensor& t) {
  const std::vector<float> v = t.to_vector();
  return {v.begin(), v.end()};
}

// y = x W^T + b for x [n, in], W [out, in].
inline std::vector<double> linear(const std::vector<double>& x, const std::vector<double>& w,
                                  const std::vector<double>& b, int64_t n, int64_t in,
                                  int64_t out) {
  std::vector<double> y(static_cast<std::size_t>(n * out));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t o = 0; o < out; ++o) {
      double s = b[static_cast<std::size_t>(o)];
      for (int64_t k = 0; k < in; ++k) s += x[i * in + k] * w[o * in + k];
      y[i * out + o] = s;
    }
  return y;
}

// Naive causal multi-head attention in double: x [B, T, D], weights as the layer holds them.
inline std::vector<double> attention_ref(const std::vector<double>& x,
                                         const std::vector<double>& wqkv,
                                         const std::vector<double>& bqkv,
                                         const std::vector<double>& wo,
                                         const std::vector<double>& bo, int64_t B, int64_t T,
                                         int64_t D, int64_t H) {
  const int64_t d = D / H;
  const std::vector<double> qkv = linear(x, wqkv, bqkv, B * T, D, 3 * D);
  std::vector<double> merged(static_cast<std::size_t>(B * T * D), 0.0);
  auto at = [&](int64_t b, int64_t t, int64_t which, int64_t h, int64_t e) {
    return qkv[((b * T + t) * 3 + which) * D + h * d + e];
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        std::vector<double> s(static_cast<std::size_t>(i + 1));
        double m = -1e300;
        for (int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += at(b, i, 0, h, e) * at(b, j, 1, h, e);
          s[j] = dot / std::sqrt(static_cast<double>(d));
          m = std::max(m, s[j]);
        }
        double z = 0;
        for (double& v : s) z += (v = std::exp(v - m));
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j <= i; ++j) acc += s[j] / z * at(b, j, 2, h, e);
          merged[(b * T + i) * D + h * d + e] = acc;
        }
      }
  return linear(merged, wo, bo, B * T, D, D);
}

// LayerNorm over rows of D: (x - mean) / sqrt(var + 1e-5) * w + b, biased variance.
inline std::vector<double> layernorm(const std::vector<double>& x, const std::vector<double>& w,
                                     const std::vector<double>& b, int64_t n, int64_t D) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < D; ++c) m += x[i * D + c];
    m /= static_cast<double>(D);
    for (int64_t c = 0; c < D; ++c) v += (x[i * D + c] - m) * (x[i * D + c] - m);
    const double rs = 1.0 / std::sqrt(v / static_cast<double>(D) + 1e-5);
    for (int64_t c = 0; c < D; ++c) y[i * D + c] = (x[i * D + c] - m) * rs * w[c] + b[c];
  }
  return y;
}

// GELU, tanh form: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
inline double gelu(double x) {
  const double pi = 3.14159265358979323846;
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

// The mean cross-entropy of the GPT's next-token predictions for ids [B, T] and targets [B*T],
// with the model's current weights (read by name) widened to double.
inline double gpt_loss(nn::GPT& gpt, const std::vector<int64_t>& ids,
                       const std::vector<int64_t>& targets, int64_t B, int64_t T) {
  const nn::GPTConfig& c = gpt.config();
  const int64_t D = c.dim, V = c.vocab, N = B * T;
  std::map<std::string, std::vector<double>> w;
  for (const nn::ParamRef& p : gpt.parameters()) w[p.name] = to_double(p.value);
  auto get = [&](const std::string& name) -> const std::vector<double>& { return w.at(name); };
  std::vector<double> x(static_cast<std::size_t>(N * D));
  for (int64_t i = 0; i < N; ++i)
    for (int64_t e = 0; e < D; ++e)
      x[i * D + e] = get("wte.weight")[ids[i] * D + e] + get("wpe.weight")[(i % T) * D + e];
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    const std::vector<double> a =
        attention_ref(layernorm(x, get(h + "ln1.weight"), get(h + "ln1.bias"), N, D),
                      get(h + "attn.qkv.weight"), get(h + "attn.qkv.bias"),
                      get(h + "attn.proj.weight"), get(h + "attn.proj.bias"), B, T, D, c.heads);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += a[i];
    std::vector<double> f =
        linear(layernorm(x, get(h + "mlp.ln.weight"), get(h + "mlp.ln.bias"), N, D),
               get(h + "mlp.fc1.weight"), get(h + "mlp.fc1.bias"), N, D, 4 * D);
    for (double& v : f) v = gelu(v);
    const std::vector<double> m =
        linear(f, get(h + "mlp.fc2.weight"), get(h + "mlp.fc2.bias"), N, 4 * D, D);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += m[i];
  }
  const std::vector<double> hf = layernorm(x, get("ln_f.weight"), get("ln_f.bias"), N, D);
  const std::vector<double> zero(static_cast<std::size_t>(V), 0.0);
  const std::vector<double> logits =
      linear(hf, get(c.tie_head ? "wte.weight" : "head.weight"), zero, N, D, V);
  double loss = 0;
  for (int64_t i = 0; i < N; ++i) {
    double mx = -1e300, z = 0;
    for (int64_t v = 0; v < V; ++v) mx = std::max(mx, logits[i * V + v]);
    for (int64_t v = 0; v < V; ++v) z += std::exp(logits[i * V + v] - mx);
    loss += mx + std::log(z) - logits[i * V + targets[i]];
  }
  return loss / static_cast<double>(N);
}

}  // namespace gtl::testing::ref
