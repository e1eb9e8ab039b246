// generate: sampling text from a GPT, one token at a time, with a KV cache.
//
//   nn::SamplingOptions s{.temperature = 0.8f, .top_k = 40, .seed = 1};
//   std::vector<int64_t> out = nn::generate(gpt, prompt_ids, 200, s, device);
//
// The prompt runs through the model once (filling the cache); every next token is one position:
// forward_cached on the last token only (kv_cache.h). Sampling, on the host from the float32
// logits of the last position:
//   temperature  logits / temperature; 0 means greedy (argmax, the first of equal maxima)
//   top_k        keep the k largest logits (ties at the k-th kept), the rest get probability 0;
//                0 keeps all
//   seed         one Philox uniform per token (counter = token index): the same seed gives the
//                same text on any backend that gives the same logits
// Inverse-CDF sampling in double over the kept tokens in id order. Stops after max_new tokens or
// when the context is full.
#pragma once

#include <cstdint>
#include <vector>

#include "gtl/nn/gpt.h"

namespace gtl::nn {

struct SamplingOptions {
  float temperature = 1.f;  // 0: greedy
  int64_t top_k = 0;        // 0: all tokens
  uint64_t seed = 0;
};

// One token from float32 logits [V] (host): greedy, or sampled with temperature and top-k, using
// the uniform u in [0, 1).
int64_t sample_token(const std::vector<float>& logits, const SamplingOptions& options, double u);

// The prompt followed by up to max_new sampled tokens (one sequence; the prompt non-empty).
std::vector<int64_t> generate(GPT& model, const std::vector<int64_t>& prompt, int64_t max_new,
                              const SamplingOptions& options, Device device = Device::cpu());

}  // namespace gtl::nn
