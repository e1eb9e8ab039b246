// Module events in a rank's trace, from hooks: the forward and backward of every module in the
// order they ran, each leaf priced by its own forward_cost / backward_cost.
#include "gtl/distributed/module_trace.h"

#include <algorithm>
#include <string>
#include <vector>

#include "gtl/nn/models.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

nn::ModelConfig small_mlp() {
  nn::ModelConfig c;
  c.input = {1, 4, 4};
  c.hidden = 8;
  c.blocks = 2;
  c.seed = 3;
  return c;
}

// "B forward 1" / "E backward 2.fc1": one line per module event, for readable comparisons.
std::vector<std::string> lines(const std::vector<TraceEvent>& events) {
  std::vector<std::string> out;
  for (const TraceEvent& e : events) {
    if (e.kind != TraceKind::ModuleBegin && e.kind != TraceKind::ModuleEnd) continue;
    out.push_back(std::string(e.kind == TraceKind::ModuleBegin ? "B " : "E ") + e.op + " " +
                  (e.module.empty() ? "<root>" : e.module));
  }
  return out;
}

void step(nn::Module& model, int64_t batch) {
  Tensor x = Tensor::full({batch, 1, 4, 4}, 0.5);
  nn::Context ctx;
  Tensor y = model.forward(x, ctx);
  model.backward(ctx, Tensor::ones(y.shape()));
}

TEST(ModuleTrace, ForwardInOrderBackwardInReverseNested) {
  auto model = nn::make_model(small_mlp());
  auto trace = std::make_shared<Trace>();
  nn::HookHandle traced = trace_modules(*model, trace);
  step(*model, 2);
  const std::vector<std::string> got = lines(trace->events());
  // The root and the top-level layers in order (children of the blocks are nested inside).
  std::vector<std::string> top;
  for (const std::string& l : got) {
    if (l.find('.') == std::string::npos) top.push_back(l);
  }
  const std::vector<std::string> want = {
      "B forward <root>", "B forward 0",      "E forward 0",       "B forward 1",
      "E forward 1",      "B forward 2",      "E forward 2",       "B forward 3",
      "E forward 3",      "B forward 4",      "E forward 4",       "B forward 5",
      "E forward 5",      "E forward <root>", "B backward <root>", "B backward 5",
      "E backward 5",     "B backward 4",     "E backward 4",      "B backward 3",
      "E backward 3",     "B backward 2",     "E backward 2",      "B backward 1",
      "E backward 1",     "B backward 0",     "E backward 0",      "E backward <root>"};
  EXPECT_EQ(top, want) << "forward must visit the layers first to last and backward last to "
                          "first, each module's begin and end around its children's";
  // Events are numbered 0, 1, 2, ... on the rank.
  const std::vector<TraceEvent> events = trace->events();
  for (std::size_t i = 0; i < events.size(); ++i) EXPECT_EQ(events[i].seq, int64_t(i));
}

TEST(ModuleTrace, LeavesCarryTheirOwnCosts) {
  auto model = nn::make_model(small_mlp());
  auto trace = std::make_shared<Trace>();
  nn::HookHandle traced = trace_modules(*model, trace);
  step(*model, 3);
  // Layer "1" is Linear(16 -> 8) on 3 rows: 2 * 3 * 16 * 8 flops forward, twice that backward.
  int checked = 0;
  for (const TraceEvent& e : trace->events(TraceKind::ModuleEnd)) {
    if (e.module != "1") continue;
    EXPECT_TRUE(e.leaf);
    EXPECT_EQ(e.module_kind, "linear");
    EXPECT_EQ(e.flops, (e.op == "forward" ? 1.0 : 2.0) * 2 * 3 * 16 * 8)
        << e.op << " of layer 1: a leaf's ModuleEnd carries the cost of the pass that ended";
    ++checked;
  }
  EXPECT_EQ(checked, 2) << "layer 1 must end once in forward and once in backward";
  for (const TraceEvent& e : trace->events(TraceKind::ModuleEnd)) {
    if (!e.leaf) {
      EXPECT_EQ(e.flops, 0.0) << "container '" << e.module << "' must not carry compute";
    }
  }
}

TEST(ModuleTrace, TheHandleStopsTheRecording) {
  auto model = nn::make_model(small_mlp());
  auto trace = std::make_shared<Trace>();
  {
    nn::HookHandle traced = trace_modules(*model, trace);
    step(*model, 2);
  }
  const std::size_t recorded = trace->events().size();
  EXPECT_GT(recorded, 0u);
  step(*model, 2);
  EXPECT_EQ(trace->events().size(), recorded)
      << "after the handle is gone, the model's hooks must not record any more";
}

TEST(ModuleTrace, ACheckpointedBlockRunsForwardAgainInsideItsBackward) {
  nn::ModelConfig c = small_mlp();
  c.checkpoint_blocks = {1};  // layer "3" is block 1
  auto model = nn::make_model(c);
  auto trace = std::make_shared<Trace>();
  nn::HookHandle traced = trace_modules(*model, trace);
  step(*model, 2);
  const std::vector<std::string> got = lines(trace->events());
  auto at = [&](const std::string& l) {
    return std::find(got.begin(), got.end(), l) - got.begin();
  };
  const auto begin_bwd = at("B backward 3"), end_bwd = at("E backward 3");
  int recomputed = 0;
  for (auto i = begin_bwd; i < end_bwd; ++i) {
    if (got[i].rfind("E forward 3.", 0) == 0) ++recomputed;
  }
  EXPECT_GT(recomputed, 0) << "the recomputation of checkpointed block 3 must appear as forward "
                              "events inside its backward (the cost model charges it there)";
}

}  // namespace
}  // namespace gtl::dist
