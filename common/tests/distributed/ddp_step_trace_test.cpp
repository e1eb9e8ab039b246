// The whole chain the parallel labs grade with, on a toy DDP step: module hooks record each
// layer's forward and backward, grad_ready hooks issue one asynchronous all-reduce per gradient,
// the communicator records every call and wait, and the cost model turns the traces of all ranks
// into a timeline in which communication hides behind the rest of the backward pass.
#include <algorithm>
#include <mutex>

#include "dist_test_util.h"
#include "gtl/distributed/module_trace.h"
#include "gtl/distributed/timeline.h"
#include "gtl/nn/models.h"
#include "gtl/nn/parameter_buffer.h"
#include "gtl_test.h"

namespace gtl::dist {
namespace {

constexpr int kWorld = 2;

nn::ModelConfig toy_mlp() {
  nn::ModelConfig c;
  c.input = {1, 8, 8};
  c.hidden = 32;
  c.blocks = 2;  // layers: 0 flatten, 1 linear, 2 and 3 blocks, 4 layernorm, 5 linear
  c.seed = 7;
  return c;
}

// Index of the first event matching (kind, op, module), or -1.
int64_t find(const std::vector<TraceEvent>& ev, TraceKind kind, const std::string& op,
             const std::string& module = "") {
  for (const TraceEvent& e : ev) {
    if (e.kind == kind && e.op == op && (module.empty() || e.module == module)) return e.seq;
  }
  return -1;
}

// One DDP step on every rank; `overlap`: all-reduce each gradient from its grad_ready hook
// (asynchronously, waited before the optimizer would run); else all-reduce the flat gradient
// once after backward. Returns the traces of all ranks, indexed by rank.
std::vector<std::vector<TraceEvent>> ddp_step(bool overlap) {
  std::vector<std::vector<TraceEvent>> traces(kWorld);
  std::mutex mutex;
  run_ranks(kWorld, [&](Communicator& comm) {
    auto model = nn::make_model(toy_mlp());
    nn::ParameterBuffer buffer(*model, Device::cpu());
    nn::HookHandle traced = trace_modules(*model, comm.trace());
    std::vector<Work> pending;
    nn::Hooks ddp;
    if (overlap) {
      ddp.grad_ready = [&](const optim::ParamRef& p) {
        pending.push_back(comm.all_reduce_async(p.grad, ReduceOp::Avg));
      };
    }
    nn::HookHandle ddp_hooks = model->add_hooks(std::move(ddp));
    Tensor x = Tensor::full({16, 1, 8, 8}, 0.1 * (comm.rank() + 1));
    nn::Context ctx;
    Tensor y = model->forward(x, ctx);
    model->backward(ctx, Tensor::ones(y.shape()));
    if (!overlap) comm.all_reduce(buffer.grads(), ReduceOp::Avg);
    for (Work& w : pending) w.wait();
    std::lock_guard<std::mutex> lock(mutex);
    traces[comm.rank()] = comm.trace()->events();
  });
  return traces;
}

TEST(DdpStepTrace, GradientsAreAllReducedInReverseOrderWhileBackwardGoesOn) {
  const auto traces = ddp_step(/*overlap=*/true);
  auto model = nn::make_model(toy_mlp());
  const std::vector<optim::ParamRef> params = model->parameters();
  for (int r = 0; r < kWorld; ++r) {
    const std::vector<TraceEvent>& ev = traces[r];
    // 1. One all-reduce per parameter, in reverse order of parameters(), numbered 0, 1, ...
    std::vector<TraceEvent> reduces;
    for (const TraceEvent& e : ev) {
      if (e.op == "all_reduce") reduces.push_back(e);
    }
    ASSERT_EQ(reduces.size(), params.size()) << "rank " << r << ": one all-reduce per gradient";
    for (std::size_t i = 0; i < reduces.size(); ++i) {
      const optim::ParamRef& p = params[params.size() - 1 - i];
      EXPECT_EQ(reduces[i].bytes, int64_t(p.grad.nbytes()))
          << "rank " << r << ": all-reduce " << i << " must carry " << p.name
          << " (gradients become ready last parameter first)";
      EXPECT_EQ(reduces[i].group_seq, int64_t(i));
      EXPECT_TRUE(reduces[i].async);
    }
    // 2. The first all-reduce is issued inside the last layer's backward, before the backward of
    //    the layer below it begins: that is what lets communication overlap compute.
    const int64_t first = reduces.front().seq;
    EXPECT_GT(first, find(ev, TraceKind::ModuleBegin, "backward", "5"));
    EXPECT_LT(first, find(ev, TraceKind::ModuleBegin, "backward", "4"))
        << "rank " << r << ": the last layer's gradients must be on the wire before layer 4's "
        << "backward starts";
    // 3. Every wait comes after the whole backward (where the optimizer step would follow).
    const int64_t backward_end = find(ev, TraceKind::ModuleEnd, "backward", "");
    ASSERT_GE(backward_end, 0);
    for (const TraceEvent& e : ev) {
      if (e.kind == TraceKind::Wait) {
        EXPECT_GT(e.seq, backward_end) << "rank " << r << ": waits belong after backward";
      }
    }
  }
  // 4. Every rank did the same things in the same order.
  ASSERT_EQ(traces[0].size(), traces[1].size());
  for (std::size_t i = 0; i < traces[0].size(); ++i) {
    EXPECT_EQ(traces[0][i].op, traces[1][i].op) << "event " << i;
    EXPECT_EQ(traces[0][i].module, traces[1][i].module) << "event " << i;
  }
}

TEST(DdpStepTrace, TheTimelineHidesOverlappedCommunicationAndExposesTheSyncAllReduce) {
  // A toy model on H100 figures computes in nanoseconds: scale the device down (1 GFLOP/s,
  // 10 GB/s) and the link with it (1 GB/s), so that compute and communication are comparable, as
  // they are for a real model on a real GPU.
  CostModel slow;
  slow.peak_flops = 1e9;
  slow.mem_bandwidth = 1e10;
  slow.intra_node = Link{1e-6, 1e9};
  const Timeline overlapped = simulate_timeline(ddp_step(true), slow);
  const Timeline after_backward = simulate_timeline(ddp_step(false), slow);
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_EQ(after_backward.ranks[r].hidden_comm_fraction, 0.0)
        << "an all-reduce issued after backward and waited at once hides nothing";
    EXPECT_GT(overlapped.ranks[r].hidden_comm_fraction, 0.8)
        << "rank " << r << ": all-reduces issued from grad_ready must partly run while the "
        << "earlier layers compute their backward";
  }
  // Same traces, same numbers: the model is deterministic.
  EXPECT_EQ(simulate_timeline(ddp_step(true), slow).step_time(), overlapped.step_time());
}

}  // namespace
}  // namespace gtl::dist
