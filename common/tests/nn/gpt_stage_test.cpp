// Pipeline stages of the GPT (gpt_stage.h): one stage is the GPT bit for bit, memory included;
// stages run one after the other are its forward and its gradients (the tied table's two copies
// summed within the rounding of one reordered sum); a stage holds only its own parameters.
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/gpt_stage.h"
#include "gtl_test.h"
#include "nn/gpt_test_util.h"

using namespace gtl;

namespace {

nn::GPTConfig config(bool tied, bool checkpoint, uint64_t seed) {
  nn::GPTConfig c;
  c.vocab = 37;
  c.context = 8;
  c.dim = 16;
  c.layers = 4;
  c.heads = 2;
  c.tie_head = tied;
  c.checkpoint = checkpoint;
  c.seed = seed;
  return c;
}

struct Batch {
  Tensor ids, targets;
};

Batch batch(const nn::GPTConfig& c, int64_t b, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t n = b * c.context;
  std::vector<int64_t> ids, targets;
  for (int64_t i = 0; i < n; ++i) {
    ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.vocab)));
    targets.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.vocab)));
  }
  return {gtl::testing::ids_tensor(ids, {b, c.context}), gtl::testing::ids_tensor(targets, {n})};
}

// One forward, loss and backward through `stages` in order (a pipeline of one micro-batch).
struct Step {
  Tensor logits, loss;
  std::map<std::string, std::vector<Tensor>> grads;  // by parameter name, one per stage holding it
};

template <typename M>
Step run(std::vector<std::unique_ptr<M>>& stages, const Batch& in) {
  std::vector<nn::Context> ctx(stages.size());
  Tensor x = in.ids;
  for (std::size_t s = 0; s < stages.size(); ++s) x = stages[s]->forward(x, ctx[s]);
  Step step;
  step.logits = x;
  const nn::CrossEntropyLoss loss;
  nn::Context loss_ctx;
  step.loss = loss.forward(x, in.targets, loss_ctx);
  Tensor d = loss.backward(loss_ctx);
  for (std::size_t s = stages.size(); s-- > 0;) d = stages[s]->backward(ctx[s], d);
  for (const auto& stage : stages) {
    for (const nn::ParamRef& p : stage->parameters()) step.grads[p.name].push_back(p.grad);
  }
  return step;
}

std::vector<std::unique_ptr<nn::GPTStage>> split(const nn::GPTConfig& c, int stages) {
  std::vector<std::unique_ptr<nn::GPTStage>> out;
  for (int s = 0; s < stages; ++s) out.push_back(std::make_unique<nn::GPTStage>(c, s, stages));
  return out;
}

void expect_bitwise(const Tensor& a, const Tensor& e, const std::string& what) {
  gtl::testing::expect_close(a, e, {0, 0}, what);
}

}  // namespace

TEST(GptStage, OneStageIsTheGptBitForBitMemoryIncluded) {
  for (const bool tied : {true, false}) {
    for (const bool checkpoint : {false, true}) {
      const nn::GPTConfig c = config(tied, checkpoint, 5);
      const Batch in = batch(c, 3, 9);
      std::shared_ptr<Allocator> a_gpt = make_cpu_caching_allocator();
      std::shared_ptr<Allocator> a_stage = make_cpu_caching_allocator();
      Step whole, staged;
      {
        AllocatorScope scope(a_gpt);
        std::vector<std::unique_ptr<nn::GPT>> gpt;
        gpt.push_back(std::make_unique<nn::GPT>(c));
        whole = run(gpt, in);
      }
      {
        AllocatorScope scope(a_stage);
        std::vector<std::unique_ptr<nn::GPTStage>> one = split(c, 1);
        staged = run(one, in);
      }
      const std::string what =
          std::string(tied ? "tied" : "untied") + (checkpoint ? ", checkpointed" : "");
      expect_bitwise(staged.logits, whole.logits, what + ": logits");
      expect_bitwise(staged.loss, whole.loss, what + ": loss");
      ASSERT_EQ(staged.grads.size(), whole.grads.size()) << what << ": parameter names differ";
      for (const auto& [name, g] : whole.grads) {
        ASSERT_EQ(staged.grads.count(name), 1u) << what << ": no parameter " << name;
        expect_bitwise(staged.grads[name].at(0), g.at(0), what + ": gradient of " + name);
      }
      EXPECT_EQ(a_stage->stats().peak_allocated_bytes, a_gpt->stats().peak_allocated_bytes)
          << what << ": one stage must allocate exactly what the GPT does, at every moment";
    }
  }
}

TEST(GptStage, StagesInOrderAreTheGptsForwardAndGradients) {
  for (const bool tied : {true, false}) {
    for (const int stages : {2, 4}) {
      const nn::GPTConfig c = config(tied, /*checkpoint=*/stages == 4, 7);
      const Batch in = batch(c, 2, 3);
      std::vector<std::unique_ptr<nn::GPT>> gpt;
      gpt.push_back(std::make_unique<nn::GPT>(c));
      const Step whole = run(gpt, in);
      std::vector<std::unique_ptr<nn::GPTStage>> pipe = split(c, stages);
      Step staged = run(pipe, in);
      const std::string what =
          std::string(tied ? "tied" : "untied") + ", " + std::to_string(stages) + " stages";
      expect_bitwise(staged.logits, whole.logits, what + ": logits");
      expect_bitwise(staged.loss, whole.loss, what + ": loss");
      ASSERT_EQ(staged.grads.size(), whole.grads.size()) << what << ": parameter names differ";
      for (const auto& [name, g] : whole.grads) {
        const std::vector<Tensor>& parts = staged.grads[name];
        if (name == "wte.weight" && tied) {
          // Stage 0's copy has the embedding's part, the last stage's the head's: the sum is the
          // table's gradient. GPT adds the embedding's rows onto the head's part in place, each
          // element a sum of at most N + 1 = 17 float32 terms no larger than the largest
          // element; any two orders of it differ by at most 2 x 17 roundings of 2^-24 of that.
          ASSERT_EQ(parts.size(), 2u) << what
                                      << ": the tied table must be on the first and "
                                         "last stage";
          const std::vector<float> e = g.at(0).to_vector(), h = parts[1].to_vector();
          std::vector<float> sum = parts[0].to_vector();
          float largest = 0;
          for (std::size_t i = 0; i < sum.size(); ++i) {
            sum[i] += h[i];
            largest = std::max(largest, std::fabs(e[i]));
          }
          const double atol = 2 * 17 * std::ldexp(1.0, -24) * largest;
          const std::string err = gtl::testing::compare(sum, e, {atol, 0});
          EXPECT_TRUE(err.empty()) << what << ": the two copies' gradients summed: " << err;
        } else {
          ASSERT_EQ(parts.size(), 1u) << what << ": " << name << " must be on one stage";
          expect_bitwise(parts[0], g.at(0), what + ": gradient of " + name);
        }
      }
    }
  }
}

TEST(GptStage, AStageAllocatesOnlyItsOwnParametersAndGradients) {
  const nn::GPTConfig c = config(/*tied=*/true, false, 2);
  nn::GPT gpt(c);
  std::map<std::string, Tensor> values;
  for (const nn::ParamRef& p : gpt.parameters()) values[p.name] = p.value;
  for (int s = 0; s < 4; ++s) {
    std::shared_ptr<Allocator> alloc = make_cpu_caching_allocator();
    AllocatorScope scope(alloc);
    nn::GPTStage stage(c, s, 4);
    int64_t numel = 0;
    for (const nn::ParamRef& p : stage.parameters()) {
      numel += p.value.numel();
      ASSERT_EQ(values.count(p.name), 1u) << "stage " << s << ": " << p.name;
      expect_bitwise(p.value, values[p.name], "stage " + std::to_string(s) + ": " + p.name);
    }
    // Block l of 4: 12 D^2 + 13 D; stage 0 the tables, the last stage ln_f and its table copy.
    const int64_t d = c.dim, block = 12 * d * d + 13 * d;
    const int64_t expected =
        block + (s == 0 ? c.vocab * d + c.context * d : 0) + (s == 3 ? 2 * d + c.vocab * d : 0);
    EXPECT_EQ(numel, expected) << "stage " << s << "'s parameters";
    EXPECT_EQ(alloc->stats().allocated_bytes, 8 * expected)
        << "stage " << s << ": a value and a gradient of 4 bytes each per parameter, no more";
    EXPECT_EQ(stage.tied_table() != nullptr, s == 0 || s == 3) << "stage " << s;
  }
}

TEST(GptStage, RefusesUnequalStagesAndTheWrongInput) {
  const nn::GPTConfig c = config(true, false, 1);
  gtl::testing::expect_error_naming([&] { nn::GPTStage s(c, 0, 3); },
                                    {"stages dividing the 4 layers"}, "3 stages of 4 layers");
  gtl::testing::expect_error_naming([&] { nn::GPTStage s(c, 2, 2); }, {"got stage 2 of 2"},
                                    "stage 2 of 2");
  nn::GPTStage middle(c, 1, 4);
  nn::Context ctx;
  const Batch in = batch(c, 1, 1);
  gtl::testing::expect_error_naming([&] { middle.forward(in.ids, ctx); },
                                    {"expected the previous stage's x [B, T, 16] float32"},
                                    "ids into a middle stage");
}
