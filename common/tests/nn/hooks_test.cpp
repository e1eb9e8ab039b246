// The hooks later labs plug into: gradient-ready callbacks (DDP) and per-layer callbacks (FSDP).
#include <string>
#include <vector>

#include "gtl/nn/checkpointed.h"
#include "gtl/nn/models.h"
#include "gtl/nn/residual_mlp.h"
#include "gtl_test.h"

using namespace gtl;

namespace {
std::unique_ptr<nn::Sequential> small_mlp(bool checkpoint) {
  nn::ModelConfig c;
  c.input = {1, 4, 4};
  c.hidden = 8;
  c.blocks = 2;
  c.classes = 3;
  c.checkpoint = checkpoint;
  return nn::make_model(c);
}
}  // namespace

// DDP starts all-reducing a gradient bucket as soon as its gradients are final; backward
// finishes the last layer first, so gradients must be announced exactly once each, in the reverse
// of the parameters() order.
TEST(Hooks, GradReadyFiresOncePerParameterInReverseOrder) {
  for (bool checkpoint : {false, true}) {
    auto model = small_mlp(checkpoint);
    auto hooks = std::make_shared<nn::Hooks>();
    std::vector<std::string> fired;
    std::vector<bool> grad_was_written;
    hooks->grad_ready = [&](const nn::ParamRef& p) {
      fired.push_back(p.name);
      // The gradient must already be final when the hook fires (nonzero after this backward).
      float norm = 0;
      for (float v : p.grad.to_vector()) norm += v * v;
      grad_was_written.push_back(norm > 0);
    };
    model->set_hooks(hooks);
    Generator gen(1);
    nn::Context ctx;
    Tensor y = model->forward(Tensor::normal({5, 1, 4, 4}, gen), ctx);
    model->backward(ctx, Tensor::normal(y.shape(), gen));

    std::vector<std::string> expected;
    for (const nn::ParamRef& p : model->parameters()) expected.insert(expected.begin(), p.name);
    EXPECT_EQ(fired, expected) << "grad_ready (checkpoint=" << checkpoint
                               << ") must fire once per parameter, last layer first";
    for (std::size_t i = 0; i < grad_was_written.size(); ++i) {
      EXPECT_TRUE(grad_was_written[i]) << fired[i] << ": grad_ready fired before its gradient "
                                       << "was written";
    }
  }
}

// FSDP gathers a unit's weights before its forward and before its backward and frees them after
// the forward: the callbacks must bracket every module's own work, children nested inside.
TEST(Hooks, LayerCallbacksFireAroundEachModuleInOrder) {
  Generator gen(2);
  nn::ResidualMLP block(4, gen);
  std::vector<std::string> events;
  auto hooks = std::make_shared<nn::Hooks>();
  hooks->before_forward = [&](nn::Module& m) { events.push_back("fwd+ " + m.kind()); };
  hooks->after_forward = [&](nn::Module& m) { events.push_back("fwd- " + m.kind()); };
  hooks->before_backward = [&](nn::Module& m) { events.push_back("bwd " + m.kind()); };
  block.set_hooks(hooks);
  nn::Context ctx;
  Tensor y = block.forward(Tensor::normal({2, 4}, gen), ctx);
  block.backward(ctx, Tensor::normal(y.shape(), gen));
  const std::vector<std::string> expected = {
      "fwd+ residual_mlp", "fwd+ layernorm", "fwd- layernorm", "fwd+ linear", "fwd- linear",
      "fwd+ gelu",         "fwd- gelu",      "fwd+ linear",    "fwd- linear", "fwd- residual_mlp",
      "bwd residual_mlp",  "bwd linear",     "bwd gelu",       "bwd linear",  "bwd layernorm"};
  EXPECT_EQ(events, expected) << "per-layer callbacks: forward brackets each module with its "
                                 "children nested inside; backward visits layers last to first";
}

// Checkpointing recomputes the segment's forward inside backward, so the forward callbacks fire
// again there (FSDP must gather the segment's weights for the recomputation too).
TEST(Hooks, CheckpointedSegmentFiresForwardHooksAgainInBackward) {
  Generator gen(3);
  nn::Checkpointed layer(std::make_unique<nn::ResidualMLP>(4, gen));
  int forwards = 0, backwards = 0;
  auto hooks = std::make_shared<nn::Hooks>();
  hooks->before_forward = [&](nn::Module& m) { forwards += m.kind() == "residual_mlp"; };
  hooks->before_backward = [&](nn::Module& m) { backwards += m.kind() == "residual_mlp"; };
  layer.set_hooks(hooks);
  nn::Context ctx;
  Tensor y = layer.forward(Tensor::normal({2, 4}, gen), ctx);
  EXPECT_EQ(forwards, 1);
  layer.backward(ctx, Tensor::normal(y.shape(), gen));
  EXPECT_EQ(forwards, 2) << "the checkpointed block's forward runs again in backward";
  EXPECT_EQ(backwards, 1);
}

TEST(Hooks, ParameterNamesArePathsInTheModel) {
  auto model = small_mlp(false);
  const auto params = model->parameters();
  ASSERT_GE(params.size(), 4u);
  EXPECT_EQ(params[0].name, "1.weight");  // 0 is Flatten, 1 the input Linear
  EXPECT_EQ(params[2].name, "2.ln.weight");
  EXPECT_EQ(params[4].name, "2.fc1.weight");
  auto checkpointed = small_mlp(true);
  EXPECT_EQ(checkpointed->parameters()[2].name, "2.segment.ln.weight");
}

TEST(Hooks, BackwardWithoutForwardIsAClearError) {
  Generator gen(4);
  nn::ResidualMLP block(4, gen);
  nn::Context ctx;
  try {
    block.backward(ctx, Tensor::zeros({2, 4}));
    FAIL() << "backward on an empty context must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run forward"), std::string::npos) << e.what();
  }
}
