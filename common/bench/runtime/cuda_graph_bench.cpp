// A launch-bound training step (a narrow, deep residual MLP on a small batch: hundreds of small
// kernels) run eagerly and replayed as a CUDA graph (gtl/runtime/cuda_graph.h), on one GPU.
//
// BM_GraphReplay/<blocks> times kSteps replays with GPU events (UseManualTime) and, in the same
// run, kSteps eager steps of an identical model; counters: eager_step_us, graph_step_us,
// speedup_vs_eager (eager / graph), launches_per_eager_step and launches_per_replay (launch
// counts, launch_count.h). Before timing, one replay is checked against one eager step of an
// identical twin (loss and weights bitwise): a graph that computes something else reports an
// error, not a speed. Skipped with the reason without a GPU (graphs need one).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/optim/sgd.h"
#include "gtl/runtime/cuda_graph.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/launch_count.h"
#include "time_once.h"

namespace {

using namespace gtl;

constexpr int kSteps = 50;
constexpr int64_t kBatch = 32;

// A residual MLP of `blocks` blocks, width 64, its SGD, and the static batch its step reads.
struct Trainee {
  std::unique_ptr<nn::Sequential> model;
  std::unique_ptr<nn::ParameterBuffer> buffer;
  std::unique_ptr<optim::Sgd> sgd;
  Tensor x, labels, loss;

  explicit Trainee(int64_t blocks) {
    const Device gpu = Device::cuda(0);
    nn::ModelConfig c;
    c.kind = "mlp";
    c.input = {1, 8, 8};
    c.hidden = 64;
    c.blocks = blocks;
    model = nn::make_model(c);
    buffer = std::make_unique<nn::ParameterBuffer>(*model, gpu);
    sgd = std::make_unique<optim::Sgd>(model->parameters(), optim::SgdOptions{.lr = 0.01f});
    Generator gen(5);
    x = Tensor::normal({kBatch, 1, 8, 8}, gen).to(gpu);
    std::vector<float> l;
    for (int64_t i = 0; i < kBatch; ++i) l.push_back(static_cast<float>(i % 10));
    labels = Tensor::from_vector(l, {kBatch}).to(DType::Int64).to(gpu);
  }

  void step() {
    nn::Context ctx, loss_ctx;
    const nn::CrossEntropyLoss ce;
    loss = ce.forward(model->forward(x, ctx), labels, loss_ctx);
    model->backward(ctx, ce.backward(loss_ctx));
    sgd->step();
  }
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.to_vector() == b.to_vector();
}

void BM_GraphReplay(benchmark::State& state) {
  if (!cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + cuda_unavailable_reason()).c_str());
    return;
  }
  const int64_t blocks = state.range(0);
  const Device gpu = Device::cuda(0);
  Trainee eager(blocks), graphed(blocks);
  eager.step();  // warm-up of both: handles, allocator segments
  graphed.step();
  CudaGraph graph;
  graph.capture([&] { graphed.step(); });
  eager.step();
  graph.replay();
  if (!same_bits(graphed.loss, eager.loss) ||
      !same_bits(graphed.buffer->values(), eager.buffer->values())) {
    state.SkipWithError("a replay differs from the eager step (loss or weights): not timed");
    return;
  }
  const LaunchCounts before = launch_counts();
  eager.step();
  const LaunchCounts per_eager = launch_counts() - before;
  double eager_s = 0, graph_s = 0;
  for (auto _ : state) {
    eager_s = bench::time_once(gpu, [&] {
      for (int i = 0; i < kSteps; ++i) eager.step();
    });
    graph_s = bench::time_once(gpu, [&] {
      for (int i = 0; i < kSteps; ++i) graph.replay();
    });
    state.SetIterationTime(graph_s / kSteps);
  }
  state.counters["eager_step_us"] = 1e6 * eager_s / kSteps;
  state.counters["graph_step_us"] = 1e6 * graph_s / kSteps;
  state.counters["speedup_vs_eager"] = eager_s / graph_s;
  state.counters["launches_per_eager_step"] = static_cast<double>(per_eager.total());
  state.counters["launches_per_replay"] = 1;
  state.counters["kernels_in_graph"] = static_cast<double>(graph.captured_launches().total());
}
BENCHMARK(BM_GraphReplay)->Arg(2)->Arg(8)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
