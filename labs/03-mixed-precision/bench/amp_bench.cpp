// Lab 03 benchmarks: the speed and memory of mixed precision, with your recipe (TODO 6) and your
// half weight copy (TODO 2) in the step.
//
//   BM_AmpStep/<fp32|bf16|fp16>   GPU: a training step of the benchmark MLP (hidden 1024, 8
//                                 blocks, batch 4096: where tensor cores matter) under
//                                 amp_recipe(<precision>); manual time from GPU events. Counter
//                                 peak_allocated_bytes (the device allocator, exact).
//   BM_LabStep/<cpu_fp32|gpu_bf16>  the capstone's model (hidden 64, 2 blocks, batch 64): one
//                                 training step on the CPU in float32 vs on the GPU in bf16.
//   BM_HalfForward/<fp32|bf16>    CPU: forward + backward of an MLP (hidden 256, 4 blocks, batch
//                                 256); bf16 with your HalfWeightCache. Counters
//                                 activation_bytes (held between forward and backward) and
//                                 peak_allocated_bytes over the step, both exact.
// Each benchmark checks its result (a finite loss, a cache of the right size) and reports an
// error instead of a time when it is wrong.
//
// What of TODO 6 the step benchmarks use: only recipe.policy (the dtype the matmuls compute in).
// The core's Trainer runs the step, and it brings its own loss scaler (for fp16) and float32
// parameters, so recipe.loss_scaling, init_scale and master_weights do not change the timed step
// (the AmpRecipe.* and Bf16Training.* tests check those). A wrong policy changes the speed and
// memory checks; a wrong scaler or master-weight flag does not.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <functional>

#include "gtl/data/synthetic_digits.h"
#include "gtl/memory/allocator.h"
#include "gtl/nn/cross_entropy.h"
#include "gtl/runtime/stream.h"
#include "gtl/train/trainer.h"
#include "mixed_precision.h"
#include "time_once.h"

namespace {

using gtl::bench::time_once;

using namespace gtl;

const char* const kPrecisions[] = {"fp32", "bf16", "fp16"};

// Timed training steps of `model` under the recipe of `precision` on fixed batches.
void run_steps(benchmark::State& state, Device device, const std::string& precision,
               const nn::ModelConfig& model, int64_t batch) {
  if (device.is_cuda() && !cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + cuda_unavailable_reason()).c_str());
    return;
  }
  try {
    const lab03::AmpRecipe recipe = lab03::amp_recipe(precision);
    // What is timed must be the precision the benchmark is named after (TF32 off in fp32): a
    // recipe that computes in another dtype would time something else.
    const DType named = precision == "fp32"   ? DType::Float32
                        : precision == "bf16" ? DType::BFloat16
                                              : DType::Float16;
    if (recipe.policy.compute != named || recipe.policy.tf32) {
      state.SkipWithError(("amp_recipe(\"" + precision + "\") is wrong: it computes in " +
                           recipe.policy.name() + ", not in " + precision)
                              .c_str());
      return;
    }
    train::TrainerOptions o;
    o.model = model;
    o.batch_size = batch;
    o.device = device;
    o.precision = recipe.policy;
    o.prefetch = 1;
    train::Trainer trainer(o, std::make_shared<data::SyntheticDigits>(batch));
    Generator gen(1);
    Tensor images = Tensor::uniform({batch, 1, 28, 28}, gen, 0.f, 1.f, DType::Float32, device);
    std::vector<float> classes(static_cast<std::size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) classes[static_cast<std::size_t>(i)] = float(i % 10);
    Tensor labels = Tensor::from_vector(classes, {batch}).to(DType::Int64).to(device);
    for (int i = 0; i < 2; ++i) trainer.train_step(images, labels);  // warm-up
    std::shared_ptr<Allocator> alloc = current_allocator(device);
    alloc->reset_peak_stats();
    float loss = 0;
    for (auto _ : state) {
      state.SetIterationTime(
          time_once(device, [&] { loss = trainer.train_step(images, labels).loss; }));
    }
    if (!std::isfinite(loss)) {
      state.SkipWithError("the training loss is not finite");
      return;
    }
    state.counters["peak_allocated_bytes"] =
        static_cast<double>(alloc->stats().peak_allocated_bytes);
    state.SetLabel(precision + " on " + device.str());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_AmpStep(benchmark::State& state) {
  nn::ModelConfig model;
  model.hidden = 1024;
  model.blocks = 8;
  run_steps(state, Device::cuda(0), kPrecisions[state.range(0)], model, 4096);
}

void BM_LabStep(benchmark::State& state) {
  const bool gpu = state.range(0) == 1;
  run_steps(state, gpu ? Device::cuda(0) : Device::cpu(), gpu ? "bf16" : "fp32", nn::ModelConfig{},
            64);
}

void BM_HalfForward(benchmark::State& state) {
  const bool half = state.range(0) == 1;
  nn::ModelConfig config;
  config.hidden = 256;
  config.blocks = 4;
  const int64_t batch = 256;
  try {
    auto model = nn::make_model(config);
    std::unique_ptr<lab03::HalfWeightCache> cache;
    if (half) {
      cache = std::make_unique<lab03::HalfWeightCache>(*model, DType::BFloat16);
      int64_t copied_elements = 0;
      for (const auto& p : model->parameters())
        copied_elements += p.compute.defined() ? p.compute.numel() : 0;
      if (copied_elements == 0 || cache->bytes() != 2 * copied_elements) {
        state.SkipWithError("HalfWeightCache::bytes() is not 2 bytes per copied element");
        return;
      }
    }
    data::SyntheticDigits digits(batch);
    Tensor images = Tensor::empty({batch, 1, 28, 28});
    Tensor labels = Tensor::empty({batch}, DType::Int64);
    std::vector<int64_t> idx(static_cast<std::size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) idx[static_cast<std::size_t>(i)] = i;
    digits.gather(idx, images.data<float>(), labels.data<int64_t>());
    nn::PrecisionScope scope(half ? nn::PrecisionPolicy::bf16() : nn::PrecisionPolicy::fp32());
    const nn::CrossEntropyLoss head;
    std::shared_ptr<Allocator> alloc = current_allocator(Device::cpu());
    alloc->reset_peak_stats();
    const int64_t base = alloc->stats().allocated_bytes;
    float loss = 0;
    int64_t held = 0;
    for (auto _ : state) {
      nn::Context ctx, loss_ctx;
      loss = head.forward(model->forward(images, ctx), labels, loss_ctx).item();
      held = alloc->stats().allocated_bytes - base;  // what forward keeps for backward
      model->backward(ctx, head.backward(loss_ctx, 1.f));
    }
    if (!std::isfinite(loss)) {
      state.SkipWithError("the loss is not finite");
      return;
    }
    // Bytes the forward holds for backward (its contexts and the loss), and the step's peak, on
    // top of what was live before it (model, gradients, compute copy, batch).
    state.counters["activation_bytes"] = static_cast<double>(held);
    state.counters["peak_allocated_bytes"] =
        static_cast<double>(alloc->stats().peak_allocated_bytes - base);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace

BENCHMARK(BM_AmpStep)->DenseRange(0, 2)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LabStep)->DenseRange(0, 1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HalfForward)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
