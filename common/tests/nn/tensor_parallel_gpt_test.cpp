// The tensor-parallel GPT (tensor_parallel.h, gpt_stage.h with a TP group): k in-process ranks,
// each running its shards of every pipeline stage one after the other, train exactly what one
// process does: the same loss and every gradient the slice of one process's (within the rounding
// of sums taken in another order), with exactly Megatron-LM's all-reduces, and each rank holding
// exactly its shards of the parameters and of the saved activations. With sequence parallelism
// too: the same training, all-gathers and reduce-scatters in place of the all-reduces, and the
// LayerNorms' saved tensors cut in k.
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtl/distributed/in_process.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt_stage.h"
#include "gtl/nn/vocab_parallel.h"
#include "gtl_test.h"
#include "nn/gpt_test_util.h"
#include "nn/tensor_parallel_slice.h"

using namespace gtl;

namespace {

struct Shape4 {
  int k, pp;
  bool tied, checkpoint;
  bool sp = false;
};

nn::GPTConfig config(const Shape4& s, uint64_t seed) {
  nn::GPTConfig c;
  c.vocab = 48;
  c.context = 8;
  c.dim = 16;
  c.layers = 4;
  c.heads = 4;
  c.tie_head = s.tied;
  c.checkpoint = s.checkpoint;
  c.seed = seed;
  return c;
}

constexpr int64_t kBatch = 2;

struct Batch {
  Tensor ids, targets;
};

Batch batch(const nn::GPTConfig& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> ids, targets;
  for (int64_t i = 0; i < kBatch * c.context; ++i) {
    ids.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.vocab)));
    targets.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(c.vocab)));
  }
  return {gtl::testing::ids_tensor(ids, {kBatch, c.context}),
          gtl::testing::ids_tensor(targets, {kBatch * c.context})};
}

// One micro-batch through the stages in order; the gradients by name, a tied table's two copies
// summed (the embedding group's all-reduce); the slices are tensor_parallel_slice.h's.
struct Result {
  float loss = 0;
  std::map<std::string, std::vector<float>> grads;
};

Result run(const nn::GPTConfig& c, int pp, const Batch& in, dist::Communicator* tp,
           bool sp = false) {
  std::vector<std::unique_ptr<nn::GPTStage>> stages;
  for (int s = 0; s < pp; ++s) {
    stages.push_back(std::make_unique<nn::GPTStage>(c, s, pp, tp, sp));
  }
  std::vector<nn::Context> ctx(stages.size());
  Tensor x = in.ids;
  for (int s = 0; s < pp; ++s) x = stages[s]->forward(x, ctx[s]);
  nn::Context loss_ctx;
  Result out;
  Tensor d;
  if (tp != nullptr) {
    const nn::VocabParallelCrossEntropy loss(*tp);
    out.loss = loss.forward(x, in.targets, loss_ctx).item();
    d = loss.backward(loss_ctx);
  } else {
    const nn::CrossEntropyLoss loss;
    out.loss = loss.forward(x, in.targets, loss_ctx).item();
    d = loss.backward(loss_ctx);
  }
  for (int s = pp; s-- > 0;) d = stages[s]->backward(ctx[s], d);
  for (const auto& stage : stages) {
    for (const nn::ParamRef& p : stage->parameters()) {
      std::vector<float> g = p.grad.to_vector();
      auto [it, fresh] = out.grads.try_emplace(p.name, g);
      if (!fresh) {
        for (std::size_t i = 0; i < g.size(); ++i) it->second[i] += g[i];
      }
    }
  }
  return out;
}

class TensorParallelGPT : public ::testing::TestWithParam<Shape4> {};

// Bars, from the rounding of float32 sums taken in another order: an all-reduced GEMM sums k
// partial products instead of one, the vocabulary-parallel loss sums exp over k slices and
// averages in double. Measured on the 2-core CPU machine at these sizes (every shape, with and
// without SP, seeds 1-3): losses within 2.4e-7, gradients within 3.6e-6 of the largest element of
// their tensor; the bars are about 40 and 28 times that. A missing or misplaced all-reduce is off
// by O(1).
constexpr double kLossBar = 1e-5, kGradBar = 1e-4;

TEST_P(TensorParallelGPT, TrainsWhatOneProcessTrains) {
  const Shape4 s = GetParam();
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const nn::GPTConfig c = config(s, seed);
    const Batch in = batch(c, seed + 100);
    const Result whole = run(c, s.pp, in, nullptr);
    std::vector<Result> ranks(static_cast<std::size_t>(s.k));
    dist::RunOptions options;
    options.deterministic = true;
    dist::run_ranks(
        s.k, [&](dist::Communicator& tp) { ranks[tp.rank()] = run(c, s.pp, in, &tp, s.sp); },
        options);
    for (int r = 0; r < s.k; ++r) {
      const Result& got = ranks[r];
      EXPECT_NEAR(got.loss, whole.loss, kLossBar)
          << "rank " << r << " of " << s.k << ", seed " << seed;
      EXPECT_EQ(got.grads.size(), whole.grads.size());
      for (const auto& [name, g] : whole.grads) {
        ASSERT_TRUE(got.grads.count(name)) << "rank " << r << " holds no " << name;
        const std::vector<float> e = gtl::testing::tp_slice(name, g, c.dim, s.k, r);
        const std::vector<float>& a = got.grads.at(name);
        ASSERT_EQ(a.size(), e.size()) << name << ": rank " << r << "'s shard of " << s.k;
        double scale = 0, err = 0;
        for (std::size_t i = 0; i < e.size(); ++i) {
          scale = std::max(scale, std::fabs(static_cast<double>(e[i])));
          err = std::max(err, std::fabs(static_cast<double>(a[i]) - e[i]));
        }
        EXPECT_LE(err, kGradBar * std::max(scale, 1e-3))
            << name << ": rank " << r << " of " << s.k << ", seed " << seed
            << ": its gradient is not its slice of one process's";
      }
    }
  }
}

// Exactly Megatron-LM's all-reduces, per micro-batch: forward, the lookup (stage 0) and two per
// block ([N, D] each: proj's and fc2's partial sums); backward, two per block (qkv's and fc1's dx)
// and the head's dx; a checkpointed block's recomputed forward two more; the loss three of N
// floats (max, the label's logit, the sum of exponentials). Under SP each block's all-reduce is
// an all-gather where the stream enters a column layer and a reduce-scatter where it leaves a row
// layer (forward: qkv's and fc1's input gathered, proj's and fc2's output scattered; backward:
// proj's and fc2's dy gathered, qkv's and fc1's dx scattered), the head's dx is reduce-scattered
// and its input gathered, stage 0's backward gathers its rows' gradient, and each LayerNorm
// all-reduces its two gradients of D floats. (All of [N, D] counted whole: the trace's bytes.)
TEST_P(TensorParallelGPT, AllReducesExactlyMegatronsTensors) {
  const Shape4 s = GetParam();
  const nn::GPTConfig c = config(s, 7);
  const Batch in = batch(c, 8);
  const int64_t n = kBatch * c.context, act = n * c.dim * 4, passes = s.checkpoint ? 3 : 2;
  std::map<std::pair<std::string, int64_t>, int64_t> expected;  // (op, bytes) -> calls
  if (!s.sp) {
    expected[{"all_reduce", act}] = 1 + c.layers * 2 * passes + 1;
  } else {
    expected[{"all_reduce", act}] = 1;
    expected[{"all_gather", act}] = c.layers * 2 * passes + 1 + 1;
    expected[{"reduce_scatter", act}] = c.layers * 2 * passes + 1;
    expected[{"all_reduce", c.dim * 4}] += 4 * c.layers + 2;
  }
  expected[{"all_reduce", n * 4}] += 3;
  std::vector<std::map<std::pair<std::string, int64_t>, int64_t>> got(
      static_cast<std::size_t>(s.k));
  dist::run_ranks(s.k, [&](dist::Communicator& tp) {
    run(c, s.pp, in, &tp, s.sp);
    for (const dist::TraceEvent& e : tp.trace()->events()) ++got[tp.rank()][{e.op, e.bytes}];
  });
  for (int r = 0; r < s.k; ++r) EXPECT_EQ(got[r], expected) << "rank " << r << " of " << s.k;
}

INSTANTIATE_TEST_SUITE_P(Shapes, TensorParallelGPT,
                         ::testing::Values(Shape4{2, 1, true, false}, Shape4{2, 1, false, false},
                                           Shape4{4, 1, true, false}, Shape4{4, 1, false, false},
                                           Shape4{2, 2, true, false}, Shape4{2, 2, false, true},
                                           Shape4{4, 2, true, true}, Shape4{2, 4, true, false},
                                           Shape4{2, 1, true, false, true},
                                           Shape4{4, 1, false, false, true},
                                           Shape4{2, 2, false, true, true},
                                           Shape4{4, 2, true, true, true},
                                           Shape4{2, 4, true, false, true}),
                         [](const ::testing::TestParamInfo<Shape4>& p) {
                           const Shape4& s = p.param;
                           return "tp" + std::to_string(s.k) + "_pp" + std::to_string(s.pp) +
                                  (s.tied ? "_tied" : "_untied") + (s.checkpoint ? "_ckpt" : "") +
                                  (s.sp ? "_sp" : "");
                         });

// Each rank holds its shards: per block 6D + (12D^2 + 7D)/k parameters (the LayerNorms and the
// row-parallel biases whole), and a block's forward saves per micro-batch, in float32 and beyond
// its input (the caller's tensor, which ln1 keeps), ln1's mean and rstd, the MLP's LayerNorm's
// input, mean and rstd, and qkv's and fc1's inputs whole (12ND + 16N bytes), and its heads' q, k,
// v and P, proj's input, GELU's and fc2's inputs cut in k ((48ND + 4BHT^2)/k). Under SP the
// block's input is the rank's N/k tokens and the LayerNorms' tensors are cut too: qkv's and fc1's
// gathered inputs whole (8ND), the rest over k ((4ND + 16N + 48ND + 4BHT^2)/k).
TEST(TensorParallelGPTMemory, EachRankHoldsItsShards) {
  for (const Shape4& s : {Shape4{2, 1, true, false}, Shape4{4, 1, false, false},
                          Shape4{2, 1, true, false, true}, Shape4{4, 1, false, false, true}}) {
    const nn::GPTConfig c = config(s, 3);
    const int64_t k = s.k, d = c.dim, n = kBatch * c.context, t = c.context;
    std::vector<std::shared_ptr<Allocator>> allocs;
    for (int r = 0; r < k; ++r) allocs.push_back(make_cpu_caching_allocator());
    dist::RunOptions options;
    options.allocators = allocs;
    dist::run_ranks(
        s.k,
        [&](dist::Communicator& tp) {
          nn::GPTStage stage(c, 0, 1, &tp, s.sp);
          const int64_t block = 6 * d + (12 * d * d + 7 * d) / k;
          const int64_t tables =
              c.vocab * d / k + c.context * d + 2 * d + (s.tied ? 0 : c.vocab * d / k);
          EXPECT_EQ(stage.num_parameters(), c.layers * block + tables)
              << "rank " << tp.rank() << " of " << k;
          nn::Module& h0 = *stage.children().at(2);  // after wte and wpe
          nn::Context ctx;
          Generator gen(5);
          const Tensor x = Tensor::normal({kBatch, s.sp ? t / k : t, d}, gen, 0.f, 1.f);
          const int64_t before = allocs[tp.rank()]->stats().allocated_bytes;
          const Tensor y = h0.forward(x, ctx);
          const int64_t saved = allocs[tp.rank()]->stats().allocated_bytes - before - y.nbytes();
          const int64_t heads = 48 * n * d + 4 * kBatch * c.heads * t * t;
          const int64_t expected =
              s.sp ? 8 * n * d + (4 * n * d + 16 * n + heads) / k : 12 * n * d + 16 * n + heads / k;
          EXPECT_EQ(saved, expected)
              << "rank " << tp.rank() << " of " << k << (s.sp ? " with SP" : "")
              << ": bytes one block's forward saves";
        },
        options);
  }
}

// A bf16 head's logits: the vocabulary-parallel loss works on their float32 widening, as
// CrossEntropyLoss does, so the loss is bit for bit the one of those float32 logits, and the
// gradient comes back in bf16, the rounding of the float32 one.
TEST(VocabParallelCrossEntropyHalf, WorksOnTheFloat32WideningOfBf16Logits) {
  const int k = 2;
  const int64_t n = 6, width = 5;
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.f, 3.f);
  std::vector<float> whole(static_cast<std::size_t>(n * k * width));
  for (float& v : whole) v = normal(rng);
  const Tensor labels = gtl::testing::ids_tensor({0, 9, 4, 5, 7, 2}, {n});
  dist::run_ranks(k, [&](dist::Communicator& tp) {
    std::vector<float> mine;  // this rank's columns [r V/k, (r+1) V/k)
    for (int64_t i = 0; i < n; ++i) {
      const auto row = whole.begin() + (i * k + tp.rank()) * width;
      mine.insert(mine.end(), row, row + width);
    }
    const Tensor half = Tensor::from_vector(mine, {n, width}).to(DType::BFloat16);
    const Tensor widened = half.to(DType::Float32);
    const nn::VocabParallelCrossEntropy loss(tp);
    nn::Context ctx_half, ctx_float;
    const float got = loss.forward(half, labels, ctx_half).item();
    const float expected = loss.forward(widened, labels, ctx_float).item();
    EXPECT_EQ(got, expected) << "rank " << tp.rank();
    const Tensor d_half = loss.backward(ctx_half);
    const Tensor d_float = loss.backward(ctx_float);
    ASSERT_EQ(d_half.dtype(), DType::BFloat16) << "the gradient in the logits' dtype";
    EXPECT_EQ(d_half.to(DType::Float32).to_vector(),
              d_float.to(DType::BFloat16).to(DType::Float32).to_vector())
        << "rank " << tp.rank();
  });
}

// A TP size that does not divide the heads or the vocabulary is refused by name, before the
// stage draws anything.
TEST(TensorParallelGPTRefuses, SizesThatDoNotDivide) {
  nn::GPTConfig c = config({3, 1, true, false}, 1);
  dist::run_ranks(3, [&](dist::Communicator& tp) {
    gtl::testing::expect_error_naming([&] { nn::GPTStage stage(c, 0, 1, &tp); },
                                      {"4 heads", "across 3"}, "TP 3 of 4 heads");
  });
}

}  // namespace
