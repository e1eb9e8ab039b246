// The KV cache: incremental decoding equals full recomputation bit for bit on the CPU, the
// cache's bytes match the stated formula in the allocator's statistics, and sampling honours
// temperature 0 (greedy) and top-k.
#include "bitwise_diff.h"
#include "gpt_test_util.h"
#include "gtl/memory/allocator.h"
#include "gtl/nn/generate.h"
#include "gtl/nn/gpt.h"
#include "gtl/ops/math_mode.h"
#include "gtl_test.h"

using namespace gtl;
using gtl::testing::ids_tensor;

namespace {

nn::GPTConfig small_config(bool tie) {
  nn::GPTConfig c;
  c.vocab = 256;
  c.context = 19;
  c.dim = 16;
  c.layers = 2;
  c.heads = 4;
  c.tie_head = tie;
  c.seed = 3;
  return c;
}

}  // namespace

TEST(GptKvCache, IncrementalDecodingEqualsFullForward) {
  // Row-invariant GEMMs (math_mode.h): every row of a Linear is computed the same way whether the
  // call has 34 rows (the full forward) or 2 (one decoding step). Attention, softmax, the mask
  // and LayerNorm are row-independent already. Without it, OpenBLAS's Haswell sgemm rounds a row
  // differently among 34 rows than among 2 (measured: 1 ulp).
  const ops::ScopedRowInvariant row_invariant(true);
  for (bool tie : {true, false}) {
    nn::GPT gpt(small_config(tie));
    const int64_t b = 2, t = 17;  // T not a multiple of anything
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < b * t; ++i) ids.push_back((i * 37 + 11) % 256);
    nn::Context ctx;
    const std::vector<float> full = gpt.forward(ids_tensor(ids, {b, t}), ctx).to_vector();
    // Prefill 5 positions, then one at a time.
    nn::KVCache cache = gpt.make_cache(b, t, Device::cpu());
    std::vector<std::vector<float>> rows(static_cast<std::size_t>(b * t));
    auto run = [&](int64_t start, int64_t len) {
      std::vector<int64_t> chunk;
      for (int64_t r = 0; r < b; ++r)
        for (int64_t p = start; p < start + len; ++p) chunk.push_back(ids[r * t + p]);
      const std::vector<float> out =
          gpt.forward_cached(ids_tensor(chunk, {b, len}), cache).to_vector();
      for (int64_t r = 0; r < b; ++r)
        for (int64_t p = 0; p < len; ++p)
          rows[static_cast<std::size_t>(r * t + start + p)] = std::vector<float>(
              out.begin() + (r * len + p) * 256, out.begin() + (r * len + p + 1) * 256);
    };
    run(0, 5);
    for (int64_t p = 5; p < t; ++p) run(p, 1);
    for (int64_t i = 0; i < b * t; ++i) {
      const std::vector<float> want(full.begin() + i * 256, full.begin() + (i + 1) * 256);
      ASSERT_EQ(gtl::testing::bitwise_diff(rows[static_cast<std::size_t>(i)], want), "")
          << (tie ? "tied" : "untied") << ": row " << i << " (sequence " << i / t << ", position "
          << i % t << ") of the cached logits differs from the full forward's";
    }
  }
}

TEST(GptKvCache, BytesMatchFormulaAndAllocator) {
  nn::GPT gpt(small_config(true));
  std::shared_ptr<Allocator> alloc = current_allocator(Device::cpu());
  for (int64_t batch : {1, 3}) {
    for (int64_t len : {1, 7, 19}) {
      const int64_t before = alloc->stats().allocated_bytes;
      nn::KVCache cache = gpt.make_cache(batch, len, Device::cpu());
      const int64_t formula = 2 * 2 /*layers*/ * 4 /*heads*/ * 4 /*head_dim*/ * len * batch * 4;
      EXPECT_EQ(cache.bytes(), formula);
      EXPECT_EQ(alloc->stats().allocated_bytes - before, formula)
          << "the allocator must see exactly 2 x layers x heads x head_dim x T x B x dtype size";
    }
  }
}

TEST(GptKvCache, SamplingGreedyAndTopK) {
  const std::vector<float> logits = {0.f, 3.f, 1.f, 2.f};
  nn::SamplingOptions greedy;
  greedy.temperature = 0.f;
  EXPECT_EQ(nn::sample_token(logits, greedy, 0.99), 1);
  nn::SamplingOptions top2;
  top2.top_k = 2;
  for (double u : {0.0, 0.3, 0.6, 0.999}) {
    const int64_t tok = nn::sample_token(logits, top2, u);
    EXPECT_TRUE(tok == 1 || tok == 3) << "top-2 sampled token " << tok;
  }
  // u below p(1) = e^3 / (e^3 + e^2) = 0.731 picks token 1, above it token 3 (id order).
  EXPECT_EQ(nn::sample_token(logits, top2, 0.7), 1);
  EXPECT_EQ(nn::sample_token(logits, top2, 0.75), 3);
  nn::GPT gpt(small_config(true));
  nn::SamplingOptions s;
  s.temperature = 0.8f;
  s.top_k = 5;
  s.seed = 4;
  const std::vector<int64_t> a = nn::generate(gpt, {65, 66}, 30, s);
  EXPECT_EQ(a.size(), 19u) << "stops at the context";
  EXPECT_EQ(a, nn::generate(gpt, {65, 66}, 30, s)) << "same seed, same tokens";
}
