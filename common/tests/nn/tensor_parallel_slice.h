// Tests' view of Megatron-LM's tensor-parallel layout, written apart from the core's
// tensor_parallel.cpp so that the tests do not check the core against itself: which of the GPT's
// parameters TP cuts, and TP rank t's slice of a whole parameter's values. qkv's weight and bias
// by rows, its heads' rows of each of q, k and v; fc1's weight and bias, the token table and an
// untied head by rows; proj's and fc2's weights by columns; the rest (LayerNorms, row-parallel
// biases, the position table) whole.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gtl::testing {

inline bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

inline bool cut_by_tp(const std::string& name) {
  for (const char* cut : {"attn.qkv.weight", "attn.qkv.bias", "mlp.fc1.weight", "mlp.fc1.bias",
                          "attn.proj.weight", "mlp.fc2.weight", "wte.weight", "head.weight"}) {
    if (ends_with(name, cut)) return true;
  }
  return false;
}

// `whole`: the parameter `name` of a GPT of width d, row-major; k TP ranks.
inline std::vector<float> tp_slice(const std::string& name, const std::vector<float>& whole,
                                   int64_t d, int64_t k, int64_t t) {
  if (k == 1 || !cut_by_tp(name)) return whole;
  auto ends = [&](const std::string& suffix) { return ends_with(name, suffix); };
  const int64_t cols = ends(".bias") ? 1 : ends("fc2.weight") ? 4 * d : d;
  const int64_t rows = static_cast<int64_t>(whole.size()) / cols;
  std::vector<float> out;
  auto take_rows = [&](int64_t first, int64_t count) {
    out.insert(out.end(), whole.begin() + first * cols, whole.begin() + (first + count) * cols);
  };
  if (ends("attn.qkv.weight") || ends("attn.qkv.bias")) {
    for (int64_t part = 0; part < 3; ++part) take_rows(part * d + t * (d / k), d / k);
  } else if (ends("mlp.fc1.weight") || ends("mlp.fc1.bias") || ends("wte.weight") ||
             ends("head.weight")) {
    take_rows(t * (rows / k), rows / k);
  } else {  // proj's and fc2's weights
    for (int64_t i = 0; i < rows; ++i) {
      const auto row = whole.begin() + i * cols;
      out.insert(out.end(), row + t * (cols / k), row + (t + 1) * (cols / k));
    }
  }
  return out;
}

}  // namespace gtl::testing
