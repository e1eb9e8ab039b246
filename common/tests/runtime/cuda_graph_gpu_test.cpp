// CUDA graphs (gtl/runtime/cuda_graph.h): a captured training step replays bitwise what the eager
// step computes, in one launch, allocating nothing; and the rules of capture hold (no host sync,
// static buffers, frozen host scalars). On a GPU (label gpu) and on the CPU emulator (label cpu),
// which records and refuses the same calls.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "gtl/nn/cross_entropy.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl/optim/sgd.h"
#include "gtl/runtime/cuda_graph.h"
#include "gtl/runtime/launch_count.h"
#include "gtl_test.h"

namespace gtl {
namespace {

const Device kGpu = Device::cuda(0);
constexpr int64_t kBatch = 4, kFeatures = 16, kClasses = 5;

// A small classifier, its SGD, and the static input buffers its captured step reads.
struct Trainee {
  std::unique_ptr<nn::Sequential> model;
  std::unique_ptr<nn::ParameterBuffer> buffer;
  std::unique_ptr<optim::Sgd> sgd;
  Tensor x = Tensor::zeros({kBatch, 1, 4, 4}, DType::Float32, kGpu);
  Tensor labels = Tensor::zeros({kBatch}, DType::Int64, kGpu);
  Tensor loss;  // the last step's loss, on the GPU

  Trainee() {
    nn::ModelConfig c;
    c.kind = "mlp";
    c.input = {1, 4, 4};
    c.classes = kClasses;
    c.hidden = 8;
    model = nn::make_model(c);
    buffer = std::make_unique<nn::ParameterBuffer>(*model, kGpu);
    sgd = std::make_unique<optim::Sgd>(model->parameters(), optim::SgdOptions{.lr = 0.1f});
  }

  // One training step on whatever x and labels hold; no host read.
  void step() {
    nn::Context ctx, loss_ctx;
    const nn::CrossEntropyLoss ce;
    loss = ce.forward(model->forward(x, ctx), labels, loss_ctx);
    model->backward(ctx, ce.backward(loss_ctx));
    sgd->step();
  }

  void load(int batch) {
    Generator gen(100 + batch);
    x.copy_(Tensor::normal({kBatch, 1, 4, 4}, gen).to(kGpu));
    std::vector<float> l;
    for (int64_t i = 0; i < kBatch; ++i)
      l.push_back(static_cast<float>((batch + 3 * i) % kClasses));
    labels.copy_(Tensor::from_vector(l, {kBatch}).to(DType::Int64).to(kGpu));
  }
};

void expect_bitwise(const Tensor& a, const Tensor& b, const std::string& what) {
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  ASSERT_EQ(va.size(), vb.size()) << what;
  for (size_t i = 0; i < va.size(); ++i)
    ASSERT_EQ(va[i], vb[i]) << what << ": element " << i << " differs (replay " << va[i]
                            << ", eager " << vb[i] << ")";
}

TEST(CudaGraph, ReplayedStepsEqualEagerStepsBitwise) {
  GTL_REQUIRE_GPU();
  Trainee eager, graphed;
  eager.load(0);
  graphed.load(0);
  eager.step();  // warm-up, both alike
  graphed.step();
  CudaGraph graph;
  graph.capture([&] { graphed.step(); });
  for (int batch = 1; batch <= 3; ++batch) {
    eager.load(batch);
    eager.step();
    graphed.load(batch);  // new data into the same buffers
    graph.replay();
    expect_bitwise(graphed.loss, eager.loss, "loss after step " + std::to_string(batch));
    expect_bitwise(graphed.buffer->values(), eager.buffer->values(),
                   "weights after step " + std::to_string(batch));
  }
}

TEST(CudaGraph, AReplayIsOneLaunchAndAllocatesNothing) {
  GTL_REQUIRE_GPU();
  Trainee t;
  t.load(0);
  t.step();
  const LaunchCounts before_eager = launch_counts();
  t.step();
  const LaunchCounts eager = launch_counts() - before_eager;
  CudaGraph graph;
  const LaunchCounts before_capture = launch_counts();
  graph.capture([&] { t.step(); });
  EXPECT_EQ(launch_counts() - before_capture, LaunchCounts{})
      << "capture records the step's launches: none reach the GPU's queue";
  EXPECT_EQ(graph.captured_launches(), eager)
      << "the graph holds the launches of one eager step (" << eager.kernels << " kernels, "
      << eager.library << " library calls)";
  EXPECT_GE(graph.nodes(), eager.total());
  const MemoryStats pool = graph.pool().stats();
  const MemoryStats ambient = current_allocator(kGpu)->stats();
  const LaunchCounts before_replay = launch_counts();
  graph.replay();
  EXPECT_EQ(launch_counts() - before_replay, (LaunchCounts{0, 0, 1}))
      << "a replay is one graph launch, whatever the step holds";
  EXPECT_EQ(graph.pool().stats().num_allocs, pool.num_allocs) << "a replay allocates nothing";
  EXPECT_EQ(current_allocator(kGpu)->stats().num_allocs, ambient.num_allocs)
      << "a replay allocates nothing";
  EXPECT_GT(pool.reserved_bytes, 0) << "the step's activations and gradients live in the pool";
}

TEST(CudaGraph, AHostSyncInsideTheStepFailsTheCapture) {
  GTL_REQUIRE_GPU();
  Trainee t;
  t.load(0);
  t.step();
  CudaGraph graph;
  gtl::testing::expect_error_naming(
      [&] {
        graph.capture([&] {
          t.step();
          (void)t.loss.item();  // a host read: nothing has run yet
        });
      },
      {"CudaGraph::capture", "cudaErrorStreamCapture"},
      "reading the loss on the host inside a captured step");
  EXPECT_FALSE(graph.captured());
  // Nothing is left capturing: eager work and a new graph still work.
  t.step();
  EXPECT_TRUE(std::isfinite(t.loss.item()));
  CudaGraph again;
  again.capture([&] { t.step(); });
  again.replay();
  EXPECT_TRUE(std::isfinite(t.loss.item()));
}

TEST(CudaGraph, AReplayReadsTheCapturedBuffersAndHostValues) {
  GTL_REQUIRE_GPU();
  Trainee t, reference;
  t.load(0);
  reference.load(0);
  t.step();
  reference.step();
  CudaGraph graph;
  graph.capture([&] { t.step(); });
  // A new tensor in the variable is not what the graph reads: it reads the captured buffer.
  t.x = Tensor::full({kBatch, 1, 4, 4}, 7.f).to(kGpu);
  // A learning rate changed on the host after capture is not seen either.
  t.sgd->set_lr(0.f);
  graph.replay();
  reference.step();  // same data as the captured buffer, lr 0.1
  expect_bitwise(t.buffer->values(), reference.buffer->values(),
                 "a replay after replacing x and changing lr on the host");
}

TEST(CudaGraph, CapturesGpuWorkOnly) {
  gtl::testing::expect_error_naming([] { CudaGraph g(Device::cpu()); }, {"CudaGraph", "GPU"},
                                    "a graph on the CPU");
}

}  // namespace
}  // namespace gtl
