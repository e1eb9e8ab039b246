// allocator_bench: the cost of one allocate + free pair, the heartbeat of a training step, at
// 4 KiB (a bias), 1 MiB (an activation slice) and 64 MiB (a big activation or gradient bucket):
// clang-format off
//   BM_CudaCachingAllocator  our caching allocator on cuda:0 (served from its cache)
//   BM_CudaMalloc            raw cudaMalloc + cudaFree (cudaFree also synchronises the device)
//   BM_CudaMallocAsync       CUDA's stream-ordered pool, cudaMallocAsync + cudaFreeAsync
//   BM_CpuCachingAllocator   the same caching logic over host memory
//   BM_CpuAllocator          plain aligned new/delete
// clang-format on
// Each row reports its time per pair (the Time column, and ns_per_pair). The caching rows also
// time their baselines in the same run, right after their own loop, and report
//   ratio_vs_cudaMalloc, ratio_vs_cudaMallocAsync, ratio_vs_cpu_allocator = baseline / caching:
// how many times faster the cache is. Expect ratio_vs_cudaMalloc in the hundreds (tens of us vs
// tens of ns) and ratio_vs_cudaMallocAsync > 1: a caching allocator should beat the stream-ordered
// pool too (about 0.7-1 us per pair on an H100, docs/results/reference-figures.md), not only
// cudaMalloc.
// Run the whole set (no --benchmark_filter) to read every row from one run; GPU rows skip with
// the reason on a machine without a GPU.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "gtl/memory/allocator.h"
#include "gtl/memory/caching_allocator.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {
namespace {

// How many baseline pairs a caching row times for its ratios (cudaMalloc of 64 MiB costs ~100 us).
constexpr int64_t kMaxBaselinePairs = 2000;

// Nanoseconds per call of `pair`, over `pairs` calls, on the host clock.
template <typename Pair>
double ns_per_pair(Pair&& pair, int64_t pairs) {
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < pairs; ++i) pair();
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / static_cast<double>(pairs);
}

// Runs Google Benchmark's loop over `pair` and reports the time per pair as a counter.
template <typename Pair>
double run_pairs(benchmark::State& state, Pair&& pair) {
  pair();  // warm-up: a caching allocator fills its cache here
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) pair();
  const std::chrono::duration<double, std::nano> elapsed = std::chrono::steady_clock::now() - start;
  const double ns = elapsed.count() / static_cast<double>(std::max<int64_t>(state.iterations(), 1));
  state.counters["ns_per_pair"] = ns;
  state.SetLabel(format_bytes(state.range(0)));
  return ns;
}

int64_t baseline_pairs(const benchmark::State& state) {
  return std::min<int64_t>(state.iterations(), kMaxBaselinePairs);
}

bool need_gpu(benchmark::State& state) {
  if (cuda_available()) return true;
  state.SkipWithError(("needs a CUDA GPU: " + cuda_unavailable_reason()).c_str());
  return false;
}

// ---- CPU: the caching logic over host memory vs plain new/delete --------------------------------

auto allocator_pair(Allocator& alloc, std::size_t bytes) {
  return [&alloc, bytes] {
    void* p = alloc.allocate(bytes);
    benchmark::DoNotOptimize(p);
    alloc.deallocate(p);
  };
}

void BM_CpuCachingAllocator(benchmark::State& state) {
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto caching = make_cpu_caching_allocator();
  auto plain = make_cpu_allocator();
  const double ns = run_pairs(state, allocator_pair(*caching, bytes));
  const double plain_ns = ns_per_pair(allocator_pair(*plain, bytes), baseline_pairs(state));
  state.counters["ratio_vs_cpu_allocator"] = plain_ns / ns;
}

void BM_CpuAllocator(benchmark::State& state) {
  auto plain = make_cpu_allocator();
  run_pairs(state, allocator_pair(*plain, static_cast<std::size_t>(state.range(0))));
}

// ---- GPU: the caching allocator vs cudaMalloc and cudaMallocAsync -------------------------------

#ifdef GTL_WITH_CUDA
auto cuda_malloc_pair(std::size_t bytes) {
  return [bytes] {
    void* p = nullptr;
    GTL_CUDA_CHECK(cudaMalloc(&p, bytes));
    GTL_CUDA_CHECK(cudaFree(p));
  };
}

auto cuda_malloc_async_pair(std::size_t bytes, cudaStream_t stream) {
  return [bytes, stream] {
    void* p = nullptr;
    GTL_CUDA_CHECK(cudaMallocAsync(&p, bytes, stream));
    GTL_CUDA_CHECK(cudaFreeAsync(p, stream));
  };
}
#endif

void BM_CudaCachingAllocator(benchmark::State& state) {
  if (!need_gpu(state)) return;
#ifdef GTL_WITH_CUDA
  const auto bytes = static_cast<std::size_t>(state.range(0));
  auto caching = make_cuda_caching_allocator(0);
  const double ns = run_pairs(state, allocator_pair(*caching, bytes));
  const double malloc_ns = ns_per_pair(cuda_malloc_pair(bytes), baseline_pairs(state));
  const Stream stream = Stream::create(Device::cuda(0));
  auto async_pair = cuda_malloc_async_pair(bytes, stream.handle());
  async_pair();  // warm CUDA's pool too
  const double async_ns = ns_per_pair(async_pair, baseline_pairs(state));
  stream.synchronize();
  state.counters["ratio_vs_cudaMalloc"] = malloc_ns / ns;
  state.counters["ratio_vs_cudaMallocAsync"] = async_ns / ns;
  state.counters["system_allocs"] = static_cast<double>(caching->stats().num_system_allocs);
#endif
}

void BM_CudaMalloc(benchmark::State& state) {
  if (!need_gpu(state)) return;
#ifdef GTL_WITH_CUDA
  run_pairs(state, cuda_malloc_pair(static_cast<std::size_t>(state.range(0))));
#endif
}

void BM_CudaMallocAsync(benchmark::State& state) {
  if (!need_gpu(state)) return;
#ifdef GTL_WITH_CUDA
  const Stream stream = Stream::create(Device::cuda(0));
  run_pairs(state,
            cuda_malloc_async_pair(static_cast<std::size_t>(state.range(0)), stream.handle()));
  stream.synchronize();
#endif
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(4 << 10)->Arg(1 << 20)->Arg(64 << 20);
}
BENCHMARK(BM_CudaCachingAllocator)->Apply(sizes);
BENCHMARK(BM_CudaMalloc)->Apply(sizes);
BENCHMARK(BM_CudaMallocAsync)->Apply(sizes);
BENCHMARK(BM_CpuCachingAllocator)->Apply(sizes);
BENCHMARK(BM_CpuAllocator)->Apply(sizes);

}  // namespace
}  // namespace gtl

BENCHMARK_MAIN();
