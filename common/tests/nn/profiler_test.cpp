// The module profiler (gtl/nn/profiler.h) on the CPU: every leaf call in order with the cost
// model's figures, allocated bytes that add up to the allocator's, the per-kind summary and table,
// a well-formed Chrome trace, and clear()/finish() bounding what is recorded.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/nn/activation.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/profiler.h"
#include "gtl/nn/residual_mlp.h"
#include "gtl/nn/sequential.h"

namespace gtl::nn {
namespace {

std::unique_ptr<Sequential> make_mlp(Generator& gen) {
  auto model = std::make_unique<Sequential>();
  model->add(std::make_unique<Linear>(12, 20, gen));
  model->add(std::make_unique<ReLU>());
  model->add(std::make_unique<Linear>(20, 7, gen));
  return model;
}

// forward + backward of the model on x, with dy = 1: what a step's layers do.
void pass(Module& model, const Tensor& x) {
  Context ctx;
  const Tensor y = model.forward(x, ctx);
  model.backward(ctx, Tensor::ones(y.shape()));
}

std::vector<Module*> leaves(Module& m) {
  if (m.is_leaf()) return {&m};
  std::vector<Module*> out;
  for (const auto& c : m.children())
    for (Module* l : leaves(*c)) out.push_back(l);
  return out;
}

TEST(Profiler, RecordsEveryLeafCallInOrderWithItsCost) {
  Generator gen(3);
  auto model = make_mlp(gen);
  const Tensor x = Tensor::normal({5, 12}, gen);
  Profiler profiler(*model, Device::cpu());
  pass(*model, x);
  profiler.finish();
  const std::vector<Module*> layers = leaves(*model);
  const auto& calls = profiler.calls();
  ASSERT_EQ(calls.size(), 2 * layers.size()) << "one forward and one backward call per layer";
  for (size_t i = 0; i < layers.size(); ++i) {
    const ProfiledCall& f = calls[i];
    const ProfiledCall& b = calls[2 * layers.size() - 1 - i];  // backward runs last to first
    EXPECT_EQ(f.path, layers[i]->path());
    EXPECT_EQ(f.pass, "forward");
    EXPECT_EQ(b.path, layers[i]->path());
    EXPECT_EQ(b.pass, "backward");
    EXPECT_EQ(f.kind, layers[i]->kind());
    EXPECT_EQ(f.input_shape, layers[i]->last_input_shape());
    const ComputeCost fc = layers[i]->forward_cost(f.input_shape);
    const ComputeCost bc = layers[i]->backward_cost(f.input_shape);
    EXPECT_EQ(f.cost.flops, fc.flops) << f.path;
    EXPECT_EQ(f.cost.bytes, fc.bytes) << f.path;
    EXPECT_EQ(b.cost.flops, bc.flops) << b.path;
    EXPECT_EQ(b.cost.bytes, bc.bytes) << b.path;
    EXPECT_GE(f.host_us, 0);
    EXPECT_EQ(f.device_us, -1) << "no device time on the CPU";
    EXPECT_EQ(f.launches, LaunchCounts{}) << "CPU work launches nothing";
    EXPECT_EQ(f.syncs.total(), 0);
  }
  EXPECT_GT(calls[0].cost.flops, 0);
}

TEST(Profiler, AllocatedBytesAddUpToTheAllocators) {
  Generator gen(4);
  auto model = make_mlp(gen);
  const Tensor x = Tensor::normal({6, 12}, gen);
  Profiler profiler(*model, Device::cpu());
  const int64_t before = current_allocator(Device::cpu())->stats().allocated_bytes;
  Context ctx;
  const Tensor y = model->forward(x, ctx);
  const int64_t after_forward = current_allocator(Device::cpu())->stats().allocated_bytes;
  profiler.finish();
  int64_t recorded = 0;
  for (const ProfiledCall& c : profiler.calls()) recorded += c.allocated_bytes;
  // Every byte of a plain stack's forward is allocated inside one of its layers' calls: what the
  // calls left allocated is what the forward holds (saved activations and the output).
  EXPECT_EQ(recorded, after_forward - before);
  EXPECT_GT(recorded, 0);
}

// A container with work of its own (ResidualMLP: its residual add) is recorded with that work
// alone, after its children; a container with none (Sequential) is not recorded at all.
TEST(Profiler, AContainersOwnWorkIsRecordedWithoutItsChildren) {
  Generator gen(6);
  Sequential model;
  model.add(std::make_unique<Linear>(12, 16, gen));
  model.add(std::make_unique<ResidualMLP>(16, gen));
  const Tensor x = Tensor::normal({5, 12}, gen);
  Profiler profiler(model, Device::cpu());
  const int64_t before = current_allocator(Device::cpu())->stats().allocated_bytes;
  Context ctx;
  const Tensor y = model.forward(x, ctx);
  const int64_t after_forward = current_allocator(Device::cpu())->stats().allocated_bytes;
  model.backward(ctx, Tensor::ones(y.shape()));
  profiler.finish();
  const Module& block = *model.children()[1];
  std::vector<std::string> order;
  int64_t forward_allocated = 0;
  for (const ProfiledCall& c : profiler.calls()) {
    order.push_back(c.path + " " + c.pass);
    if (c.pass == "forward") forward_allocated += c.allocated_bytes;
    if (c.path == block.path()) {
      const ComputeCost own = c.pass == "forward" ? block.forward_cost(c.input_shape)
                                                  : block.backward_cost(c.input_shape);
      EXPECT_EQ(c.kind, block.kind());
      EXPECT_EQ(c.cost.flops, own.flops) << c.pass << ": the add's own cost, not its children's";
      EXPECT_EQ(c.cost.bytes, own.bytes) << c.pass;
      EXPECT_GT(c.cost.flops, 0) << c.pass;
    }
  }
  const std::string b = block.path();
  const auto at = [&](const std::string& call) {
    return std::find(order.begin(), order.end(), call) - order.begin();
  };
  EXPECT_GT(at(b + " forward"), at(b + ".fc2 forward")) << "recorded when it ends";
  EXPECT_GT(at(b + " backward"), at(b + ".ln backward")) << "recorded when it ends";
  int block_calls = 0, model_calls = 0;
  for (const std::string& o : order) {
    block_calls += o == b + " forward" || o == b + " backward";
    model_calls += o.rfind("model ", 0) == 0;
  }
  EXPECT_EQ(block_calls, 2) << "one record of the block's own work per pass";
  EXPECT_EQ(model_calls, 0) << "a Sequential does nothing of its own: no record";
  // Every byte the forward left allocated is in exactly one record, the add's output included.
  EXPECT_EQ(forward_allocated, after_forward - before);
}

TEST(Profiler, SummaryAddsUpCallsOfAKindAndPass) {
  Generator gen(5);
  auto model = make_mlp(gen);
  const Tensor x = Tensor::normal({4, 12}, gen);
  Profiler profiler(*model, Device::cpu());
  for (int step = 0; step < 3; ++step) pass(*model, x);
  profiler.finish();
  const std::vector<ProfileRow> rows = profiler.summary();
  ASSERT_EQ(rows.size(), 4u) << "linear and relu, forward and backward";
  double host = 0, flops = 0;
  for (const ProfiledCall& c : profiler.calls()) {
    host += c.host_us;
    flops += c.cost.flops;
  }
  double row_host = 0, row_flops = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const bool linear = rows[i].name.rfind(model->children()[0]->kind(), 0) == 0;
    EXPECT_EQ(rows[i].calls, linear ? 6 : 3) << rows[i].name << ": 3 steps";
    if (i > 0) {
      EXPECT_GE(rows[i - 1].host_us, rows[i].host_us) << "sorted by total time";
    }
    row_host += rows[i].host_us;
    row_flops += rows[i].flops;
  }
  EXPECT_DOUBLE_EQ(row_flops, flops);
  EXPECT_NEAR(row_host, host, 1e-6 * host);
  const std::string table = profiler.table();
  EXPECT_NE(table.find("layer pass"), std::string::npos) << table;
  EXPECT_NE(table.find("total"), std::string::npos) << table;
  EXPECT_NE(table.find(rows[0].name), std::string::npos) << table;
}

// Rows add every count, graph launches included (the table's total row is such a sum), and a
// device time stays "not measured" (-1) only while no row measured one.
TEST(Profiler, RowsAddEveryCount) {
  ProfileRow a{"Linear forward", 2, 10.0, -1, 100, 40, 64, {3, 1, 0}, {0, 1, 0}};
  const ProfileRow b{"ReLU forward", 1, 5.0, 7.5, 20, 8, -16, {1, 0, 2}, {1, 0, 1}};
  a += ProfileRow{"ReLU backward", 1, 1.0, -1, 0, 0, 0, {}, {}};
  EXPECT_EQ(a.device_us, -1) << "no row measured a device time";
  a += b;
  EXPECT_EQ(a.name, "Linear forward");
  EXPECT_EQ(a.calls, 4);
  EXPECT_DOUBLE_EQ(a.host_us, 16.0);
  EXPECT_DOUBLE_EQ(a.device_us, 7.5);
  EXPECT_DOUBLE_EQ(a.flops, 120);
  EXPECT_DOUBLE_EQ(a.bytes, 48);
  EXPECT_EQ(a.allocated_bytes, 48);
  EXPECT_EQ(a.launches, (LaunchCounts{4, 1, 2})) << "graph launches count too";
  EXPECT_EQ(a.syncs, (HostSyncCounts{1, 1, 1}));
}

TEST(Profiler, ChromeTraceHasOneEventPerCall) {
  Generator gen(6);
  auto model = make_mlp(gen);
  Profiler profiler(*model, Device::cpu());
  pass(*model, Tensor::normal({2, 12}, gen));
  profiler.finish();
  const nlohmann::json trace = nlohmann::json::parse(profiler.chrome_trace());
  const auto& events = trace.at("traceEvents");
  size_t complete = 0;
  for (const auto& e : events) {
    if (e.at("ph") != "X") continue;
    const ProfiledCall& c = profiler.calls()[complete++];
    EXPECT_EQ(e.at("name"), c.path + " " + c.pass);
    EXPECT_EQ(e.at("tid"), 1) << "host track";
    EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), c.host_start_us);
    EXPECT_DOUBLE_EQ(e.at("args").at("flops").get<double>(), c.cost.flops);
  }
  EXPECT_EQ(complete, profiler.calls().size());
}

TEST(Profiler, ClearAndFinishBoundWhatIsRecorded) {
  Generator gen(7);
  auto model = make_mlp(gen);
  const Tensor x = Tensor::normal({3, 12}, gen);
  Profiler profiler(*model, Device::cpu());
  pass(*model, x);  // warm-up
  profiler.clear();
  pass(*model, x);
  profiler.finish();
  pass(*model, x);  // after finish: not recorded, and the hooks are gone
  EXPECT_EQ(profiler.calls().size(), 6u);
  EXPECT_EQ(model->num_hook_sets(), 0);
}

}  // namespace
}  // namespace gtl::nn
