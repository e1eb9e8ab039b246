// The GPT's CUDA kernels and layers against the CPU path (itself checked against float64
// references in gpt_gradcheck_test and gpt_training_test). Built twice: for a GPU (label gpu,
// skipped without one) and on the CPU emulator (nn_gpt_emulated_test, label cpu), which runs
// every kernel's code, the emulated cublasGemmStridedBatchedEx included, on the CPU.
//
// Tolerances. Data movement is exact: permute, causal_mask_ and embedding copy or set values,
// and the embedding backward adds each table row's contributions in position order on both
// paths (ops/embedding.h): compared bit for bit. batched_matmul sums K products of values in
// [-1, 1] in float32 in another order than the CPU's loop: each result is within gamma_K * K of
// the exact sum on either side (u = 2^-24, K <= 13: 2 * 13 * 13 * 6e-8 = 2.0e-5), so atol 2e-5;
// a 16-bit result may round to the neighbouring value on top: one ulp, rtol 2^-10 (float16),
// 2^-7 (bfloat16). Layers and the whole GPT (float32, TF32 off): cuBLAS sums in another order
// than OpenBLAS, so 1e-4 + 1e-4 |cpu|, as layers_gpu_test.cpp.
#include <string>
#include <vector>

#include "bitwise_diff.h"
#include "gpt_test_util.h"
#include "gtl/nn/causal_self_attention.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/ops/causal_mask.h"
#include "gtl/ops/embedding.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/permute.h"
#include "gtl_test.h"

using namespace gtl;
using gtl::testing::Tolerance;

namespace {

constexpr Tolerance kLayers{1e-4, 1e-4};

Tensor uniform(const Shape& shape, uint64_t seed, DType dtype = DType::Float32) {
  Generator gen(seed);
  return Tensor::uniform(shape, gen, -1.f, 1.f).to(dtype);
}

Tensor on_gpu(const Tensor& t) {
  return t.to(Device::cuda(0));
}

void expect_bitwise(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  ASSERT_TRUE(gpu.is_cuda()) << what << ": the result must stay on the GPU";
  EXPECT_EQ(gtl::testing::bitwise_diff(gpu.to(Device::cpu()).to(DType::Float32).to_vector(),
                                       cpu.to(DType::Float32).to_vector()),
            "")
      << what << ": the CUDA kernel moves data, it must equal the CPU path bit for bit";
}

}  // namespace

TEST(GptGpu, BatchedMatmulMatchesCpu) {
  GTL_REQUIRE_GPU();
  // batch 3, M 5 (1: a decoding step), K 7 or 13, N 13: no size a multiple of a tile or warp.
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    const Tolerance tol{2e-5, dt == DType::Float16 ? 9.8e-4 : dt == DType::BFloat16 ? 7.9e-3 : 0.0};
    for (int64_t m : {1, 5}) {
      for (int64_t k : {7, 13}) {
        for (bool ta : {false, true}) {
          for (bool tb : {false, true}) {
            const int64_t n = 13, batch = 3;
            const Tensor a = uniform(ta ? Shape{batch, k, m} : Shape{batch, m, k}, 1, dt);
            const Tensor b = uniform(tb ? Shape{batch, n, k} : Shape{batch, k, n}, 2, dt);
            const Tensor c0 = uniform({batch, m, n}, 3, dt);
            const std::string what = std::string(dtype_name(dt)) + " M " + std::to_string(m) +
                                     " K " + std::to_string(k) + (ta ? " a^T" : "") +
                                     (tb ? " b^T" : "");
            const Tensor want = ops::batched_matmul(a, b, ta, tb, 0.5f);
            const Tensor got = ops::batched_matmul(on_gpu(a), on_gpu(b), ta, tb, 0.5f);
            ASSERT_TRUE(got.is_cuda()) << what;
            gtl::testing::expect_close(got.to(Device::cpu()), want, tol,
                                       "batched_matmul " + what + ": CUDA against CPU");
            // beta = 1 accumulates into c (attention's backward writes into slices).
            Tensor want_acc = c0.clone(), got_acc = on_gpu(c0);
            ops::batched_matmul_out(a, b, want_acc, ta, tb, 1.f, 1.f);
            ops::batched_matmul_out(on_gpu(a), on_gpu(b), got_acc, ta, tb, 1.f, 1.f);
            gtl::testing::expect_close(got_acc.to(Device::cpu()), want_acc, tol,
                                       "batched_matmul_out beta 1 " + what + ": CUDA against CPU");
          }
        }
      }
    }
  }
}

TEST(GptGpu, PermuteAndCausalMaskAreExact) {
  GTL_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    const Tensor qkv = uniform({2, 7, 3, 3, 5}, 4, dt);  // [B, T, 3, H, d]
    for (const std::vector<int64_t>& p :
         {std::vector<int64_t>{2, 0, 3, 1, 4}, std::vector<int64_t>{4, 3, 2, 1, 0}}) {
      expect_bitwise(ops::permute(on_gpu(qkv), p), ops::permute(qkv, p),
                     std::string("permute ") + dtype_name(dt));
    }
    // Square (training) and 3 queries against 11 keys (decoding with a cache).
    for (const Shape& s : {Shape{4, 7, 7}, Shape{4, 3, 11}, Shape{2, 1, 1}}) {
      Tensor cpu = uniform(s, 5, dt), gpu = on_gpu(cpu);
      ops::causal_mask_(cpu);
      ops::causal_mask_(gpu);
      expect_bitwise(gpu, cpu, "causal_mask_ " + shape_str(s) + " " + dtype_name(dt));
    }
  }
}

TEST(GptGpu, EmbeddingForwardAndBackwardAreExact) {
  GTL_REQUIRE_GPU();
  const int64_t vocab = 11, d = 6;
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 37; ++i) ids.push_back((i * i + 3) % 7);  // repeats: rows add up
  const Tensor id = gtl::testing::ids_tensor(ids, {37});
  const Tensor table = uniform({vocab, d}, 6), drows = uniform({37, d}, 7);
  expect_bitwise(ops::embedding(on_gpu(table), on_gpu(id)), ops::embedding(table, id), "embedding");
  expect_bitwise(ops::embedding_backward(on_gpu(drows), on_gpu(id), vocab),
                 ops::embedding_backward(drows, id, vocab), "embedding_backward");
  // A half table (mixed precision's sharded layout) gives float32 rows, widened exactly.
  for (DType half : {DType::BFloat16, DType::Float16}) {
    const Tensor copy = table.to(half);
    expect_bitwise(ops::embedding(on_gpu(copy), on_gpu(id)), ops::embedding(copy, id),
                   std::string("embedding of a ") + dtype_name(half) + " table");
  }
}

TEST(GptGpu, AttentionLayerMatchesCpu) {
  GTL_REQUIRE_GPU();
  for (int64_t t : {1, 13}) {
    Generator g1(8), g2(8);
    nn::CausalSelfAttention cpu(12, 3, g1), gpu(12, 3, g2);
    nn::ParameterBuffer cpu_buffer(cpu, Device::cpu());
    nn::ParameterBuffer gpu_buffer(gpu, Device::cuda(0));
    const Tensor x = uniform({2, t, 12}, 9), dy = uniform({2, t, 12}, 10);
    nn::Context cc, gc;
    const std::string what = "attention T " + std::to_string(t);
    gtl::testing::expect_close(gpu.forward(on_gpu(x), gc).to(Device::cpu()), cpu.forward(x, cc),
                               kLayers, what + " forward (GPU vs CPU)");
    gtl::testing::expect_close(gpu.backward(gc, on_gpu(dy)).to(Device::cpu()), cpu.backward(cc, dy),
                               kLayers, what + " dx (GPU vs CPU)");
    gtl::testing::expect_close(gpu_buffer.grads().to(Device::cpu()), cpu_buffer.grads(), kLayers,
                               what + " parameter gradients (GPU vs CPU)");
  }
}

TEST(GptGpu, WholeGptMatchesCpu) {
  GTL_REQUIRE_GPU();
  nn::GPTConfig c;
  c.vocab = 32;
  c.context = 9;
  c.dim = 16;
  c.layers = 2;
  c.heads = 2;
  c.seed = 11;
  nn::GPT cpu(c), gpu(c);
  nn::ParameterBuffer cpu_buffer(cpu, Device::cpu());
  nn::ParameterBuffer gpu_buffer(gpu, Device::cuda(0));
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 18; ++i) ids.push_back((i * 5 + 1) % 32);
  const Tensor in = gtl::testing::ids_tensor(ids, {2, 9});
  nn::Context cc, gc;
  const Tensor logits = cpu.forward(in, cc);
  gtl::testing::expect_close(gpu.forward(on_gpu(in), gc).to(Device::cpu()), logits, kLayers,
                             "GPT logits (GPU vs CPU)");
  const Tensor dl = uniform(logits.shape(), 12);
  cpu.backward(cc, dl);
  gpu.backward(gc, on_gpu(dl));
  gtl::testing::expect_close(gpu_buffer.grads().to(Device::cpu()), cpu_buffer.grads(), kLayers,
                             "GPT parameter gradients (GPU vs CPU)");
}
