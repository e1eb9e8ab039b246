// Lab 05 benchmarks: the cost of communicating gradients on 2 in-process CPU ranks.
//
//   BM_NaiveSync / BM_FlatSync      one all-reduce per parameter (the core's calls, as your
//                                   naive DDP does them) vs your flat DDP (TODO 4) on the lab
//                                   model's gradients: the per-call latency naive DDP pays 14 times
//   BM_RingAllReduce / BM_CoreAllReduce   your ring (TODO 1) vs the core's, 1 Mi floats
//
// Each iteration runs kCalls syncs on both ranks and times them on rank 0 between two barriers
// (manual time), so starting the rank threads is not measured. Every benchmark checks its result
// and reports an error when it is wrong: an empty TODO wins no speed check.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/in_process.h"
#include "gtl/nn/models.h"

namespace lab05 {
namespace {

constexpr int kWorld = 2;
constexpr int kCalls = 20;

// Runs body(comm, tensor-maker) kCalls times per iteration; `check` validates rank 0's result.
template <typename Setup>
void run_timed(benchmark::State& state, Setup setup) {
  for (auto _ : state) {
    double seconds = 0;
    std::string error;
    gtl::dist::run_ranks(kWorld, [&](Communicator& comm) {
      auto [sync, ok] = setup(comm);
      comm.barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kCalls; ++i) sync();
      comm.barrier();
      const auto t1 = std::chrono::steady_clock::now();
      if (comm.rank() == 0) {
        seconds = std::chrono::duration<double>(t1 - t0).count();
        error = ok();
      }
    });
    if (!error.empty()) {
      state.SkipWithError(error.c_str());
      return;
    }
    state.SetIterationTime(seconds / kCalls);
  }
}

// The lab model's gradients, all ones on every rank: their average stays one.
struct Grads {
  std::unique_ptr<gtl::nn::Sequential> model = gtl::nn::make_model(lab_model());
  gtl::nn::ParameterBuffer buffer{*model, gtl::Device::cpu()};
  Grads() { Tensor(buffer.grads()).copy_(Tensor::ones({buffer.grads().numel()})); }
  std::string check() const {
    for (float g : buffer.grads().to_vector()) {
      if (g != 1.f) return "the synced gradient is wrong (expected the average of ones: 1)";
    }
    return "";
  }
};

void BM_NaiveSync(benchmark::State& state) {
  run_timed(state, [](Communicator& comm) {
    auto g = std::make_shared<Grads>();
    return std::make_pair(
        [&comm, g] {
          for (const ParamRef& p : g->buffer.params()) {
            comm.all_reduce(p.grad, gtl::dist::ReduceOp::Avg);
          }
        },
        [g] { return g->check(); });
  });
}

void BM_FlatSync(benchmark::State& state) {
  run_timed(state, [](Communicator& comm) {
    auto g = std::make_shared<Grads>();
    return std::make_pair([&comm, g] { flat_ddp_sync(comm, g->buffer); },
                          [g] { return g->check(); });
  });
}

constexpr int64_t kRingElements = int64_t{1} << 20;

// A buffer of ones summed kCalls times over 2 ranks: 2^kCalls, exact in float32.
template <typename Reduce>
void all_reduce_bench(benchmark::State& state, Reduce reduce) {
  run_timed(state, [reduce](Communicator& comm) {
    auto t = std::make_shared<Tensor>(Tensor::ones({kRingElements}));
    return std::make_pair([&comm, t, reduce] { reduce(comm, *t); },
                          [t] {
                            const float expected = std::ldexp(1.f, kCalls);
                            for (float v : t->to_vector()) {
                              if (v != expected) return std::string("the all-reduce sum is wrong");
                            }
                            return std::string();
                          });
  });
}

void BM_RingAllReduce(benchmark::State& state) {
  all_reduce_bench(state, [](Communicator& comm, const Tensor& t) { ring_all_reduce(comm, t); });
}

void BM_CoreAllReduce(benchmark::State& state) {
  all_reduce_bench(state, [](Communicator& comm, const Tensor& t) { comm.all_reduce(t); });
}

BENCHMARK(BM_NaiveSync)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_FlatSync)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RingAllReduce)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CoreAllReduce)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace lab05

BENCHMARK_MAIN();
