// The hooks later labs plug into: gradient-ready callbacks (DDP) and per-layer callbacks (FSDP).
#include <algorithm>
#include <string>
#include <vector>

#include "gtl/nn/activation_checkpoint.h"
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
    nn::Hooks hooks;
    std::vector<std::string> fired;
    std::vector<bool> grad_was_written;
    hooks.grad_ready = [&](const nn::ParamRef& p) {
      fired.push_back(p.name);
      // The gradient must already be final when the hook fires (nonzero after this backward).
      float norm = 0;
      for (float v : p.grad.to_vector()) norm += v * v;
      grad_was_written.push_back(norm > 0);
    };
    nn::HookHandle handle = model->add_hooks(hooks);
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
  nn::Hooks hooks;
  hooks.before_forward = [&](nn::Module& m) { events.push_back("fwd+ " + m.kind()); };
  hooks.after_forward = [&](nn::Module& m) { events.push_back("fwd- " + m.kind()); };
  hooks.before_backward = [&](nn::Module& m) { events.push_back("bwd+ " + m.kind()); };
  hooks.after_backward = [&](nn::Module& m) { events.push_back("bwd- " + m.kind()); };
  hooks.grad_ready = [&](const nn::ParamRef& p) { events.push_back("grad " + p.name); };
  nn::HookHandle handle = block.add_hooks(hooks);
  nn::Context ctx;
  Tensor y = block.forward(Tensor::normal({2, 4}, gen), ctx);
  block.backward(ctx, Tensor::normal(y.shape(), gen));
  const std::vector<std::string> expected = {
      "fwd+ residual_mlp", "fwd+ layernorm",    "fwd- layernorm",    "fwd+ linear",
      "fwd- linear",       "fwd+ gelu",         "fwd- gelu",         "fwd+ linear",
      "fwd- linear",       "fwd- residual_mlp", "bwd+ residual_mlp", "bwd+ linear",
      "grad fc2.bias",     "grad fc2.weight",   "bwd- linear",       "bwd+ gelu",
      "bwd- gelu",         "bwd+ linear",       "grad fc1.bias",     "grad fc1.weight",
      "bwd- linear",       "bwd+ layernorm",    "grad ln.bias",      "grad ln.weight",
      "bwd- layernorm",    "bwd- residual_mlp"};
  EXPECT_EQ(events, expected) << "per-layer callbacks: forward and backward bracket each module "
                                 "with its children nested inside; backward visits layers last "
                                 "to first; after_backward comes after all of a module's "
                                 "grad_ready, its children's included";
}

// Checkpointing recomputes the segment's forward inside backward, so the forward callbacks fire
// again there (FSDP must gather the segment's weights for the recomputation too).
TEST(Hooks, CheckpointedSegmentFiresForwardHooksAgainInBackward) {
  Generator gen(3);
  nn::ActivationCheckpoint layer(std::make_unique<nn::ResidualMLP>(4, gen));
  int forwards = 0, backwards = 0;
  int recomputed = 0;
  nn::Hooks hooks;
  hooks.before_forward = [&](nn::Module& m) {
    forwards += m.kind() == "residual_mlp";
    recomputed += m.kind() == "residual_mlp" && nn::in_recomputation();
  };
  hooks.before_backward = [&](nn::Module& m) { backwards += m.kind() == "residual_mlp"; };
  nn::HookHandle handle = layer.add_hooks(hooks);
  nn::Context ctx;
  Tensor y = layer.forward(Tensor::normal({2, 4}, gen), ctx);
  EXPECT_EQ(forwards, 1);
  EXPECT_EQ(recomputed, 0) << "the first forward is not a recomputation";
  EXPECT_FALSE(nn::in_recomputation());
  layer.backward(ctx, Tensor::normal(y.shape(), gen));
  EXPECT_EQ(forwards, 2) << "the checkpointed block's forward runs again in backward";
  EXPECT_EQ(recomputed, 1) << "in_recomputation() must be true during the second forward only";
  EXPECT_EQ(backwards, 1);
  EXPECT_FALSE(nn::in_recomputation()) << "the recomputation flag must be reset after backward";
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

namespace {
// A hook set that appends "<tag> <event> <module kind or parameter name>" to a shared log.
nn::Hooks logger(std::vector<std::string>& log, const std::string& tag) {
  nn::Hooks h;
  h.before_forward = [&log, tag](nn::Module& m) { log.push_back(tag + " fwd+ " + m.kind()); };
  h.after_forward = [&log, tag](nn::Module& m) { log.push_back(tag + " fwd- " + m.kind()); };
  h.before_backward = [&log, tag](nn::Module& m) { log.push_back(tag + " bwd+ " + m.kind()); };
  h.after_backward = [&log, tag](nn::Module& m) { log.push_back(tag + " bwd- " + m.kind()); };
  h.grad_ready = [&log, tag](const nn::ParamRef& p) { log.push_back(tag + " grad " + p.name); };
  return h;
}

void step(nn::Module& m, Generator& gen, int64_t rows = 2) {
  nn::Context ctx;
  Tensor y = m.forward(Tensor::normal({rows, 4}, gen), ctx);
  m.backward(ctx, Tensor::normal(y.shape(), gen));
}

// Every entry of `log` with tag `tag`, the tag stripped.
std::vector<std::string> events_of(const std::vector<std::string>& log, const std::string& tag) {
  std::vector<std::string> out;
  for (const std::string& e : log) {
    if (e.rfind(tag + " ", 0) == 0) out.push_back(e.substr(tag.size() + 1));
  }
  return out;
}
}  // namespace

// A test's observer and a student's DDP hooks sit on one model: both see every event, and at each
// event the sets fire in registration order (A before B), even for a set added on a sub-module.
TEST(Hooks, SetsComposeAndFireInRegistrationOrder) {
  Generator gen(5);
  nn::ResidualMLP block(4, gen);
  std::vector<std::string> log;
  nn::HookHandle a = block.add_hooks(logger(log, "A"));
  nn::HookHandle b = block.add_hooks(logger(log, "B"));
  step(block, gen);
  ASSERT_EQ(log.size() % 2, 0u);
  const std::vector<std::string> only_a = events_of(log, "A"), only_b = events_of(log, "B");
  EXPECT_EQ(only_a.size(), 10u + 10u + 6u)
      << "a set on a residual block (5 modules, 6 parameters) must see 10 forward, 10 backward "
         "and 6 grad_ready events";
  EXPECT_EQ(only_a, only_b) << "two hook sets on one model must see the same events";
  for (std::size_t i = 0; i + 1 < log.size(); i += 2) {
    EXPECT_EQ(log[i].substr(0, 2), "A ") << "event " << i / 2 << ": set A (registered first) "
                                         << "must fire before set B, got " << log[i];
    EXPECT_EQ(log[i + 1].substr(0, 2), "B ") << "event " << i / 2 << ": got " << log[i + 1];
    EXPECT_EQ(log[i].substr(2), log[i + 1].substr(2)) << "A and B must fire for the same event";
  }
}

// The handle owns exactly its set: removing A (remove() or destruction) leaves B firing, and a
// model with no sets left fires nothing.
TEST(Hooks, HandleRemovesExactlyItsSet) {
  Generator gen(6);
  nn::ResidualMLP block(4, gen);
  std::vector<std::string> log;
  nn::HookHandle b;
  {
    nn::HookHandle a = block.add_hooks(logger(log, "A"));
    b = block.add_hooks(logger(log, "B"));
    EXPECT_EQ(block.num_hook_sets(), 2);
    EXPECT_EQ(block.children()[1]->num_hook_sets(), 2) << "add_hooks installs on every child";
  }  // a destroyed here
  EXPECT_EQ(block.num_hook_sets(), 1) << "destroying a handle must remove its set";
  step(block, gen);
  EXPECT_TRUE(events_of(log, "A").empty()) << "set A fired after its handle was destroyed";
  EXPECT_EQ(events_of(log, "B").size(), log.size()) << "set B must still fire";
  EXPECT_FALSE(events_of(log, "B").empty());
  // Moving a handle moves ownership: the moved-from handle removes nothing.
  nn::HookHandle moved = std::move(b);
  EXPECT_TRUE(moved.active());
  EXPECT_EQ(block.num_hook_sets(), 1) << "moving a handle must not remove its set";
  moved.remove();
  moved.remove();  // idempotent
  EXPECT_EQ(block.num_hook_sets(), 0);
  log.clear();
  step(block, gen);
  EXPECT_TRUE(log.empty()) << "no set left, yet " << log.size() << " events fired";
}

// Sets reach children added after add_hooks (a model built in steps), in registration order with
// the child's own sets.
TEST(Hooks, ChildrenAddedLaterGetTheSets) {
  Generator gen(7);
  nn::Sequential seq;
  std::vector<std::string> log;
  nn::HookHandle a = seq.add_hooks(logger(log, "A"));
  auto block = std::make_unique<nn::ResidualMLP>(4, gen);
  nn::HookHandle b = block->add_hooks(logger(log, "B"));  // registered after A
  seq.add(std::move(block));
  step(seq, gen);
  const std::vector<std::string> only_a = events_of(log, "A");
  ASSERT_FALSE(only_a.empty());
  EXPECT_EQ(only_a.front(), "fwd+ sequential");
  EXPECT_NE(std::find(only_a.begin(), only_a.end(), "fwd+ residual_mlp"), only_a.end())
      << "a child added after add_hooks must get the set";
  // On the block both fire; A (older) first.
  const auto first_a = std::find(log.begin(), log.end(), "A fwd+ residual_mlp");
  const auto first_b = std::find(log.begin(), log.end(), "B fwd+ residual_mlp");
  ASSERT_NE(first_b, log.end());
  EXPECT_LT(first_a, first_b) << "sets must fire in registration order on a child added later";
}

// Removing a set from inside one of its own callbacks: the running callback finishes, and the set
// fires no more, not even for the remaining parameters of the same backward. The other set is
// untouched. (Defined in module.h.)
TEST(Hooks, RemovingASetFromItsOwnCallbackStopsItAtOnce) {
  Generator gen(8);
  nn::ResidualMLP block(4, gen);
  std::vector<std::string> log;
  nn::HookHandle b = block.add_hooks(logger(log, "B"));
  nn::HookHandle self;
  int grads_seen = 0;
  nn::Hooks once;
  once.grad_ready = [&](const nn::ParamRef&) {
    ++grads_seen;
    self.remove();  // this very set
  };
  self = block.add_hooks(once);
  step(block, gen);
  EXPECT_EQ(grads_seen, 1) << "a set removed inside its own grad_ready must not fire again";
  EXPECT_EQ(block.num_hook_sets(), 1);
  EXPECT_EQ(events_of(log, "B").size(), 10u + 10u + 6u)
      << "the other set must see every event (10 forward, 10 backward, 6 grad_ready)";
}

// A handle may outlive its model (it only flags a shared entry): destroying it then is harmless.
TEST(Hooks, HandleMayOutliveTheModel) {
  nn::HookHandle handle;
  {
    Generator gen(9);
    nn::ResidualMLP block(4, gen);
    handle = block.add_hooks(nn::Hooks{});
    EXPECT_TRUE(handle.active());
  }
  handle.remove();
  EXPECT_FALSE(handle.active());
}
