// Lab 10 benchmarks. The rubric compares pairs measured in the same run, as ratios of medians:
//
//   BM_Attention/0/t   the core's attention: cuBLAS batched GEMMs (float32, TF32 off), the
//                      causal mask and a row softmax, S and P in memory (CausalSelfAttention's
//                      attend, common/gtl/nn/causal_self_attention.cpp)
//   BM_Attention/1/t   your FlashAttention forward (TODO 2)
//   BM_Attention/2/t   your naive kernels (TODO 1), reported only
//
// at 16 heads, d = 64, causal, t = 1024 and 4096; and, reported only (no check reads them):
//
//   BM_GptStep/0       one training step (forward, loss, backward) of a GPT on the reference path
//   BM_GptStep/1       the same step with your kernels in every block (TODO 5)
//
// with the step's allocator peak as the counter peak_MiB. Timing is common/bench/gpu_timed_loop.h's
// (the L2 flushed before each iteration, the device synchronised around it). Every benchmark checks
// its whole output against the core's (itself tested against the CPU path): a kernel that skips
// work to look fast fails; it is not fast. The baseline and the reference being the core's, a
// wrong TODO 1 cannot fail TODO 2's speed check.
#include <benchmark/benchmark.h>

#include <cmath>
#include <string>
#include <vector>

#include "gtl/runtime/device.h"

#ifdef GTL_WITH_CUDA
#include <cuda_runtime.h>

#include "attention.h"
#include "gpt_attention.h"
#include "gpu_timed_loop.h"
#include "gtl/memory/allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/gpt.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/ops/causal_mask.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/softmax.h"
#include "gtl/tensor/tensor.h"
#endif

namespace {

#ifdef GTL_WITH_CUDA

using gtl::Tensor;
using gtl::bench::skip_without_gpu;
using gtl::bench::timed_loop;

constexpr int kHeads = 16, kDim = 64;

Tensor random_gpu(const gtl::Shape& shape, uint64_t seed) {
  gtl::Generator g(seed);
  return Tensor::uniform(shape, g, -1.f, 1.f, gtl::DType::Float32, gtl::Device::cuda(0));
}
Tensor zeros_gpu(const gtl::Shape& shape) {
  return Tensor::zeros(shape, gtl::DType::Float32, gtl::Device::cuda(0));
}

// The core's attention, as CausalSelfAttention computes it.
Tensor core_attention(const Tensor& q, const Tensor& k, const Tensor& v) {
  Tensor s = gtl::ops::batched_matmul(q, k, false, true, 1.f / std::sqrt(float(kDim)));
  gtl::ops::causal_mask_(s);
  return gtl::ops::batched_matmul(gtl::ops::softmax(s), v);
}

// Outputs are averages of values in [-1, 1]; two float32 computations of them agree to far better
// than 1e-3 at these lengths (the tests' derived tolerances are below 1e-4), while a kernel that
// skips keys or rows is off by much more.
constexpr double kAgreement = 1e-3;

std::string first_difference(const Tensor& got, const Tensor& want) {
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::fabs(double(g[i]) - w[i]) <= kAgreement))
      return "element " + std::to_string(i) + ": " + std::to_string(g[i]) + " against the core's " +
             std::to_string(w[i]);
  return "";
}

void BM_Attention(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int version = int(state.range(0)), t = int(state.range(1));
  static const char* names[] = {"core (cuBLAS)", "flash", "naive"};
  state.SetLabel(names[version]);
  const lab10::AttentionShape shape{kHeads, t, kDim, true};
  const Tensor q = random_gpu({kHeads, t, kDim}, 1), k = random_gpu({kHeads, t, kDim}, 2),
               v = random_gpu({kHeads, t, kDim}, 3);
  Tensor o = zeros_gpu({kHeads, t, kDim}), lse = zeros_gpu({kHeads, t});
  Tensor scores = version == 2 ? zeros_gpu({kHeads, t, t}) : Tensor();
  timed_loop(state, [&] {
    if (version == 0)
      o = core_attention(q, k, v);
    else if (version == 1)
      lab10::flash_attention_forward(q.data<float>(), k.data<float>(), v.data<float>(),
                                     o.data<float>(), lse.data<float>(), shape, nullptr);
    else
      lab10::attention_naive(q.data<float>(), k.data<float>(), v.data<float>(),
                             scores.data<float>(), o.data<float>(), shape, nullptr);
  });
  if (version == 0) return;
  const std::string diff = first_difference(o, core_attention(q, k, v));
  if (!diff.empty()) state.SkipWithError(("the output is wrong: " + diff).c_str());
}
BENCHMARK(BM_Attention)
    ->ArgsProduct({{0, 1, 2}, {1024, 4096}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// A GPT-2-like stack at T = 1024: 4 blocks of width 512, 8 heads of 64, batch 8, bytes as tokens.
void BM_GptStep(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const bool flash = state.range(0) == 1;
  state.SetLabel(flash ? "your kernels (TODO 5)" : "reference path");
  gtl::nn::GPTConfig c;
  c.vocab = 256;
  c.context = 1024;
  c.dim = 512;
  c.layers = 4;
  c.heads = 8;
  c.seed = 5;
  const int64_t batch = 8;
  gtl::nn::GPT gpt(c);
  gtl::nn::ParameterBuffer buffer(gpt, gtl::Device::cuda(0));
  if (flash) gtl::nn::use_attention_kernels(gpt, lab10::flash_attention_kernels());
  gtl::Generator g(6);
  const Tensor ids = Tensor::uniform({batch, c.context}, g, 0.f, 255.f)
                         .to(gtl::DType::Int64)
                         .to(gtl::Device::cuda(0));
  const Tensor targets = ids.reshape({batch * c.context});
  const gtl::nn::CrossEntropyLoss head;
  auto alloc = gtl::current_allocator(gtl::Device::cuda(0));
  float loss = 0.f;
  int64_t peak = 0;
  timed_loop(state, [&] {
    const int64_t before = alloc->stats().allocated_bytes;
    alloc->reset_peak_stats();
    gtl::nn::Context ctx, loss_ctx;
    const Tensor logits = gpt.forward(ids, ctx);
    const Tensor l = head.forward(logits, targets, loss_ctx);
    gpt.backward(ctx, head.backward(loss_ctx));
    peak = alloc->stats().peak_allocated_bytes - before;
    loss = l.to(gtl::Device::cpu()).item();
  });
  state.counters["peak_MiB"] = double(peak) / (1 << 20);
  if (!std::isfinite(loss)) state.SkipWithError("the step's loss is not finite");
}
BENCHMARK(BM_GptStep)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);

#else

void BM_Attention(benchmark::State& state) {
  state.SkipWithError(("needs a CUDA GPU: " + gtl::cuda_unavailable_reason()).c_str());
}
BENCHMARK(BM_Attention)->ArgsProduct({{0, 1, 2}, {1024, 4096}});

void BM_GptStep(benchmark::State& state) {
  state.SkipWithError(("needs a CUDA GPU: " + gtl::cuda_unavailable_reason()).c_str());
}
BENCHMARK(BM_GptStep)->Arg(0)->Arg(1);

#endif  // GTL_WITH_CUDA

}  // namespace

BENCHMARK_MAIN();
