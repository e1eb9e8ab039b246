// optim_adamw_bench: how close the fused AdamW step comes to the memory system's limit.
//
// AdamW is memory-bound: per float32 parameter element one step reads p, g, m, v (16 bytes) and
// writes p, m, v (12 bytes); with float32 master weights and a bf16 compute copy it also writes
// 2 bytes of compute copy. The fused kernel moves each byte once, so the fair yardstick is a
// device-to-device copy moving the same number of bytes (half read, half written), timed in the
// same run right after the AdamW loop:
//   GBps               bytes AdamW moves per second
//   ratio_vs_copy      AdamW bandwidth / copy bandwidth (1.0 = as fast as memory allows)
// Arguments: millions of parameter elements, then 0 (float32) or 1 (master + bf16 compute copy).
// GPU only: skips with the reason on a machine without a GPU.
#include <benchmark/benchmark.h>

#include <memory>

#include "gtl/optim/adamw.h"
#include "gtl/optim/master_weights.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"

namespace gtl {
namespace {

constexpr int kStepsPerIteration = 10;

void BM_AdamWStep(benchmark::State& state) {
  if (!cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + cuda_unavailable_reason()).c_str());
    return;
  }
  const int64_t n = state.range(0) * 1000000;
  const bool master = state.range(1) != 0;
  const Device gpu = Device::cuda();
  Generator gen(1);
  const DType model_dtype = master ? DType::BFloat16 : DType::Float32;
  optim::ParamRef model{Tensor::normal({n}, gen, 0, 1, model_dtype, gpu),
                        Tensor::normal({n}, gen, 0, 1, model_dtype, gpu),
                        {},
                        "w"};
  std::unique_ptr<optim::MasterWeights> weights;
  std::vector<optim::ParamRef> params = {model};
  if (master) {
    weights = std::make_unique<optim::MasterWeights>(params);
    weights->grads_to_master();
    params = weights->params();
  }
  optim::AdamW adamw(params);
  const double bytes_per_step = static_cast<double>(n) * (28.0 + (master ? 2.0 : 0.0));
  const int64_t copy_floats = static_cast<int64_t>(bytes_per_step / 8.0);  // read + write = bytes
  Tensor src = Tensor::zeros({copy_floats}, DType::Float32, gpu);
  Tensor dst = Tensor::zeros({copy_floats}, DType::Float32, gpu);

  adamw.step();  // warm-up (first launch loads the module)
  device_synchronize();
  double adamw_ms = 0, copy_ms = 0;
  for (auto _ : state) {
    GpuTimer timer(current_stream());
    timer.start();
    for (int i = 0; i < kStepsPerIteration; ++i) adamw.step();
    timer.stop();
    const float ms = timer.elapsed_ms();
    state.SetIterationTime(ms / 1000.0);
    adamw_ms += ms;
    timer.start();
    for (int i = 0; i < kStepsPerIteration; ++i) dst.copy_async_(src, current_stream());
    timer.stop();
    copy_ms += timer.elapsed_ms();
  }
  const double steps = static_cast<double>(state.iterations()) * kStepsPerIteration;
  state.counters["GBps"] = bytes_per_step * steps / (adamw_ms * 1e6);
  state.counters["ratio_vs_copy"] = copy_ms / adamw_ms;
  state.SetLabel(master ? "master fp32 + bf16 compute" : "fp32");
}

BENCHMARK(BM_AdamWStep)
    ->ArgsProduct({{1, 16, 64}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gtl

BENCHMARK_MAIN();
