// All-reduce bandwidth per backend, reported exactly as nccl-tests defines it:
//
//   algbw = S / t              bytes of the buffer over the time of one all-reduce
//   busbw = algbw * 2(n-1)/n   the bandwidth each rank's link sustains in a ring all-reduce
//                              (each rank sends 2(n-1)/n * S); comparable across world sizes
//                              and with the hardware's link bandwidth
//
// Backends: in-process ranks on the CPU (memory bandwidth of this machine, shared by all
// ranks), in-process ranks sharing one GPU, and NCCL across all GPUs; the GPU ones report
// SkipWithError without a GPU. Each figure is the mean of kIters all-reduces between two
// barriers, timed by rank 0 (manual time), after one warm-up all-reduce.
//
// Every benchmark runs a fixed kRounds rounds: a round starts ranks (and, for NCCL, creates
// communicators) outside the timed part, so letting Google Benchmark repeat rounds until the
// timed part reaches its minimum time would start thousands of rounds when an all-reduce takes
// microseconds (seen on an H200: NCCL across its one GPU ran for minutes).
#include <benchmark/benchmark.h>

#include <chrono>
#include <functional>

#include "gtl/distributed/in_process.h"
#include "gtl/distributed/nccl_communicator.h"

namespace gtl::dist {
namespace {

constexpr int kIters = 20;
constexpr int kRounds = 5;

using Runner = std::function<void(int, const std::function<void(Communicator&)>&)>;

// Runs one timed round on `world` ranks; returns seconds per all-reduce and rank 0's bytes sent.
std::pair<double, int64_t> time_all_reduce(const Runner& run, int world, int64_t bytes,
                                           bool on_gpu) {
  double seconds = 0;
  int64_t sent = 0;
  run(world, [&](Communicator& comm) {
    const Device device = on_gpu ? current_stream().device() : Device::cpu();
    // Ones, not zeros (zeros can hide work a kernel skips): each all-reduce multiplies them by
    // the world size, to at most 8^(1 + kIters) = 8^21 < 1e19, far inside float32's range.
    Tensor t = Tensor::ones({bytes / 4}, DType::Float32, device);
    comm.all_reduce(t);
    if (on_gpu) current_stream().synchronize();
    comm.barrier();
    comm.reset_counters();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; ++i) comm.all_reduce(t);
    if (on_gpu) current_stream().synchronize();
    comm.barrier();
    if (comm.rank() == 0) {
      seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kIters;
      sent = comm.counters("all_reduce").bytes_sent / kIters;
    }
  });
  return {seconds, sent};
}

void report(benchmark::State& state, int world, int64_t bytes, const Runner& run, bool on_gpu) {
  double total = 0;
  int64_t sent = 0;
  for (auto _ : state) {
    auto [seconds, bytes_sent] = time_all_reduce(run, world, bytes, on_gpu);
    state.SetIterationTime(seconds);
    total += seconds;
    sent = bytes_sent;
  }
  const double algbw = double(bytes) * double(state.iterations()) / total / 1e9;
  state.counters["algbw_GBps"] = algbw;
  state.counters["busbw_GBps"] = algbw * 2.0 * (world - 1) / world;
  // The ring's traffic per rank relative to the buffer: 2(n-1)/n, from the byte counters.
  state.counters["sent_per_buffer"] = double(sent) / double(bytes);
  state.SetBytesProcessed(int64_t(state.iterations()) * bytes);
}

void BM_AllReduce_InProcessCpu(benchmark::State& state) {
  const int world = int(state.range(0));
  Runner run = [](int n, const std::function<void(Communicator&)>& fn) { run_ranks(n, fn); };
  report(state, world, state.range(1), run, false);
}

void BM_AllReduce_InProcessGpu(benchmark::State& state) {
  if (!cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + cuda_unavailable_reason()).c_str());
    return;
  }
  const int world = int(state.range(0));
  Runner run = [](int n, const std::function<void(Communicator&)>& fn) {
    RunOptions options;
    options.device = Device::cuda(0);
    run_ranks(n, fn, options);
  };
  report(state, world, state.range(1), run, true);
}

void BM_AllReduce_Nccl(benchmark::State& state) {
  if (!nccl_available()) {
    state.SkipWithError("needs NCCL and a CUDA GPU (this build or machine has neither)");
    return;
  }
  const int world = cuda_device_count();
  if (world < 2) {
    // One rank's all-reduce sends nothing: its "bandwidth" would be a copy's, and busbw is 0.
    state.SkipWithError("needs at least two GPUs (an all-reduce across one rank sends nothing)");
    return;
  }
  Runner run = [](int n, const std::function<void(Communicator&)>& fn) { run_nccl_ranks(n, fn); };
  report(state, world, state.range(0), run, true);
}

BENCHMARK(BM_AllReduce_InProcessCpu)
    ->ArgsProduct({{2, 4, 8}, {1 << 20, 16 << 20}})
    ->ArgNames({"ranks", "bytes"})
    ->UseManualTime()
    ->Iterations(kRounds)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduce_InProcessGpu)
    ->ArgsProduct({{2, 4}, {1 << 20, 64 << 20}})
    ->ArgNames({"ranks", "bytes"})
    ->UseManualTime()
    ->Iterations(kRounds)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllReduce_Nccl)
    ->ArgsProduct({{1 << 20, 64 << 20, 256 << 20}})
    ->ArgNames({"bytes"})
    ->UseManualTime()
    ->Iterations(kRounds)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace gtl::dist

BENCHMARK_MAIN();
