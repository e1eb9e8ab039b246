// The training step of the benchmark MLP (8 residual blocks, LN -> 4x GELU MLP, AdamW) per
// precision and device, with the share of its time spent in GEMMs, so the speedup table of the
// mixed-precision lab can be read from one run:
//
// clang-format off
//   BM_TrainStepGpu/<mode>   hidden 1024, batch 4096 on the GPU; mode fp32 (TF32 off), tf32,
//                            bf16, fp16 (with loss scaling). GPU time from events (UseManualTime).
//   BM_TrainStepCpu          the same model scaled down (hidden 64, batch 256), fp32 on the CPU.
// clang-format on
//
// Counters: step_ms; samples_per_s (rate); gemm_share = time of the step's GEMMs replayed alone
// (same shapes and dtypes: per Linear, forward x W^T, dx = dy W and dW = dy^T x) / step time;
// peak_MiB = the allocator's peak allocated bytes during the timed steps (allocator statistics).
// The speedup of a mode is BM_TrainStepGpu/fp32's step_ms divided by its own.
// Reference (H100, PyTorch eager, docs/results/reference-figures.md): fp32 36.6 ms, bf16
// autocast 8.76 ms (4.2x).
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>
#include <vector>

#include "gtl/nn/linear.h"
#include "gtl/nn/precision.h"
#include "gtl/ops/matmul.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"
#include "gtl/tensor/tensor.h"
#include "gtl/train/trainer.h"
#include "time_once.h"

namespace {

using gtl::bench::time_once;

using namespace gtl;

struct Workload {
  int64_t hidden, batch;
};

// A dataset is required by the Trainer; the benchmark feeds fixed batches through train_step.
class RandomImages final : public data::Dataset {
 public:
  explicit RandomImages(int64_t side) : side_(side) {}
  int64_t size() const override { return 1 << 20; }
  Shape sample_shape() const override { return {1, side_, side_}; }
  int64_t num_classes() const override { return 10; }
  int64_t get_into(int64_t index, float* image) const override {
    for (int64_t i = 0; i < side_ * side_; ++i) image[i] = static_cast<float>((index + i) % 7) / 7;
    return index % 10;
  }

 private:
  int64_t side_;
};

void collect_linears(nn::Module& m, std::vector<nn::Linear*>& out) {
  if (auto* l = dynamic_cast<nn::Linear*>(&m)) out.push_back(l);
  for (const auto& c : m.children()) collect_linears(*c, out);
}

void run_step_benchmark(benchmark::State& state, Device device, const std::string& precision,
                        Workload w) {
  train::TrainerOptions o;
  o.model.hidden = w.hidden;
  o.model.blocks = 8;
  o.batch_size = w.batch;
  o.device = device;
  o.precision = nn::PrecisionPolicy::parse(precision);
  o.prefetch = 1;
  // 32x32 "images" flattened to 1024 inputs: the first Linear is as wide as the blocks at 1024.
  train::Trainer trainer(o, std::make_shared<RandomImages>(32));
  Generator gen(1);
  Tensor images = Tensor::uniform({w.batch, 1, 32, 32}, gen, 0.f, 1.f, DType::Float32, device);
  std::vector<float> classes(static_cast<std::size_t>(w.batch));
  for (int64_t i = 0; i < w.batch; ++i)
    classes[static_cast<std::size_t>(i)] = static_cast<float>(i % 10);
  Tensor labels = Tensor::from_vector(classes, {w.batch}).to(DType::Int64).to(device);
  for (int i = 0; i < 2; ++i) trainer.train_step(images, labels);  // warm-up (cuBLAS, caches)

  // The step's GEMMs, replayed alone with the same shapes and compute dtype.
  std::vector<nn::Linear*> linears;
  collect_linears(trainer.model(), linears);
  const DType dt = o.precision.compute;
  struct Gemm {
    Tensor x, w, dy;
  };
  std::vector<Gemm> gemms;
  for (nn::Linear* l : linears) {
    gemms.push_back({Tensor::uniform({w.batch, l->in_features()}, gen, -1, 1, dt, device),
                     Tensor::uniform({l->out_features(), l->in_features()}, gen, -1, 1, dt, device),
                     Tensor::uniform({w.batch, l->out_features()}, gen, -1, 1, dt, device)});
  }
  auto all_gemms = [&] {
    ops::ScopedTF32 tf32(o.precision.tf32);
    for (const Gemm& g : gemms) {
      ops::matmul(g.x, g.w, false, true);   // forward
      ops::matmul(g.dy, g.w);               // dx
      ops::matmul(g.dy, g.x, true, false);  // dW
    }
  };
  all_gemms();

  std::shared_ptr<Allocator> alloc = current_allocator(device);
  alloc->reset_peak_stats();
  double step_seconds = 0, gemm_seconds = 0;
  for (auto _ : state) {
    const double s = time_once(device, [&] { trainer.train_step(images, labels); });
    state.SetIterationTime(s);
    step_seconds += s;
    state.PauseTiming();
    gemm_seconds += time_once(device, all_gemms);
    state.ResumeTiming();
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["step_ms"] = 1e3 * step_seconds / n;
  state.counters["gemm_share"] = gemm_seconds / step_seconds;
  state.counters["samples_per_s"] =
      benchmark::Counter(static_cast<double>(w.batch) * n, benchmark::Counter::kIsRate);
  state.counters["peak_MiB"] =
      static_cast<double>(alloc->stats().peak_allocated_bytes) / (1024.0 * 1024.0);
  state.SetLabel(precision + ", hidden " + std::to_string(w.hidden) + ", batch " +
                 std::to_string(w.batch));
}

const char* const kModes[] = {"fp32", "tf32", "bf16", "fp16"};

void BM_TrainStepGpu(benchmark::State& state) {
  if (!cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + cuda_unavailable_reason()).c_str());
    return;
  }
  run_step_benchmark(state, Device::cuda(0), kModes[state.range(0)], {1024, 4096});
}

void BM_TrainStepCpu(benchmark::State& state) {
  run_step_benchmark(state, Device::cpu(), "fp32", {64, 256});
}

}  // namespace

BENCHMARK(BM_TrainStepGpu)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TrainStepCpu)->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK_MAIN();
