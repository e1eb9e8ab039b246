// Lab 05 benchmarks: the cost of communicating gradients on 2 in-process CPU ranks.
//
//   BM_NaiveSync / BM_FlatSync      one all-reduce per parameter (the core's calls, as your
//                                   naive DDP does them) vs your flat DDP (TODO 4) on the lab
//                                   model's gradients: the per-call latency naive DDP pays 14 times
//   BM_RingAllReduce / BM_CoreAllReduce   your ring (TODO 1) vs the core's, 1 Mi floats
//
// Each iteration resets the inputs, runs kCalls syncs on both ranks and times them on rank 0
// between two barriers (manual time). Every benchmark checks its result and reports an error when
// it is wrong: an empty TODO wins no speed check.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "data_parallel.h"
#include "ddp_training.h"
#include "gtl/distributed/in_process.h"
#include "gtl/nn/models.h"
#include "lab05_student_call.h"

namespace lab05 {
namespace {

constexpr int kWorld = 2;
constexpr int kCalls = 10;  // syncs per iteration: the times reported are for 10 syncs

// Two in-process ranks for the whole benchmark: rank 0 on the benchmark's thread, rank 1 on a
// helper thread that mirrors it iteration by iteration (so no thread is started per iteration).
// setup(comm) returns a Job: each iteration resets the data (untimed), runs kCalls syncs on both
// ranks between two barriers, times them on rank 0, and checks rank 0's result.
struct Job {
  std::function<void()> reset;         // puts the inputs back (not timed)
  std::function<void()> sync;          // the operation measured
  std::function<std::string()> check;  // "" when rank 0's result is right
};

template <typename Setup>
void run_timed(benchmark::State& state, Setup setup) {
  gtl::dist::RunOptions options;
  options.timeout = std::chrono::seconds(20);
  std::vector<std::unique_ptr<Communicator>> comms =
      gtl::dist::make_in_process_world(kWorld, options);
  std::mutex mutex;
  std::condition_variable cv;
  int64_t posted = 0;  // iterations rank 0 has started
  bool stop = false;
  std::thread helper([&] {
    try {
      const Job job = setup(*comms[1]);
      for (int64_t done = 0;; ++done) {
        {
          std::unique_lock<std::mutex> lock(mutex);
          cv.wait(lock, [&] { return stop || posted > done; });
          if (posted == done) return;  // stopped
        }
        job.reset();
        comms[1]->barrier();
        for (int i = 0; i < kCalls; ++i) job.sync();
        comms[1]->barrier();
      }
    } catch (const std::exception&) {
      // rank 0 fails too (its barrier times out) and reports the error
    }
  });
  try {
    const Job job = setup(*comms[0]);
    for (auto _ : state) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ++posted;
      }
      cv.notify_all();
      job.reset();
      comms[0]->barrier();
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kCalls; ++i) job.sync();
      comms[0]->barrier();
      const auto t1 = std::chrono::steady_clock::now();
      const std::string error = job.check();
      if (!error.empty()) {
        state.SkipWithError(error.c_str());
        break;
      }
      state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  cv.notify_all();
  helper.join();
}

// The lab model's gradients, rank + 1 in every element: their average over 2 ranks is 1.5, and
// stays 1.5 however many times it is averaged again. A sync that does nothing leaves rank 0 at 1.
struct Grads {
  std::unique_ptr<gtl::nn::Sequential> model = gtl::nn::make_model(lab_model());
  gtl::nn::ParameterBuffer buffer{*model, gtl::Device::cpu()};
  int rank;
  explicit Grads(int r) : rank(r) {}
  void reset() const {
    Tensor(buffer.grads()).copy_(Tensor::full({buffer.grads().numel()}, rank + 1.0));
  }
  std::string check() const {
    for (const ParamRef& p : buffer.params()) {  // the padding between slots is not synced
      for (float g : p.grad.to_vector()) {
        if (g != 1.5f) return "the synced gradient is wrong (expected the average of 1 and 2: 1.5)";
      }
    }
    return "";
  }
};

void BM_NaiveSync(benchmark::State& state) {
  run_timed(state, [](Communicator& comm) {
    auto g = std::make_shared<Grads>(comm.rank());
    return Job{[g] { g->reset(); },
               [&comm, g] {
                 for (const ParamRef& p : g->buffer.params()) {
                   comm.all_reduce(p.grad, gtl::dist::ReduceOp::Avg);
                 }
               },
               [g] { return g->check(); }};
  });
}

void BM_FlatSync(benchmark::State& state) {
  run_timed(state, [](Communicator& comm) {
    auto g = std::make_shared<Grads>(comm.rank());
    return Job{[g] { g->reset(); }, [&comm, g] { flat_ddp_sync(comm, g->buffer.params()); },
               [g] { return g->check(); }};
  });
}

constexpr int64_t kRingElements = int64_t{1} << 20;

// A buffer of ones summed kCalls times over 2 ranks: 2^kCalls, exact in float32.
template <typename Reduce>
void all_reduce_bench(benchmark::State& state, Reduce reduce) {
  run_timed(state, [reduce](Communicator& comm) {
    auto t = std::make_shared<Tensor>(Tensor::ones({kRingElements}));
    return Job{[t] { t->copy_(Tensor::ones({kRingElements})); },
               [&comm, t, reduce] { reduce(comm, *t); },
               [t] {
                 const float expected = std::ldexp(1.f, kCalls);
                 for (float v : t->to_vector()) {
                   if (v != expected) return std::string("the all-reduce sum is wrong");
                 }
                 return std::string();
               }};
  });
}

void BM_RingAllReduce(benchmark::State& state) {
  all_reduce_bench(state, [](Communicator& comm, const Tensor& t) {
    const auto call = lab05_student_call::todo1();  // the core's collectives refuse to run
    ring_all_reduce(comm, t);
  });
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
