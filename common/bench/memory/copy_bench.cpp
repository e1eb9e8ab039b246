// copy_bench: host<->device copy bandwidth from pageable vs pinned (page-locked) host memory.
//   BM_HostToDevice/{pageable,pinned}, BM_DeviceToHost/{pageable,pinned} at 1, 16 and 256 MiB.
// The GPU's copy engines read only page-locked memory, so the driver stages a pageable copy
// through a pinned bounce buffer: slower, and cudaMemcpyAsync turns synchronous. Each copy is
// enqueued on a stream and the stream synchronised, so the time is the whole transfer.
// How to read it: bytes_per_second per row; the pinned rows also time the pageable copy in the
// same run and report ratio_vs_pageable = pinned bytes/s / pageable bytes/s. It should be >= 1.5
// on a PCIe GPU at 16 MiB and above (3.5x host-to-device on an H100,
// docs/results/reference-figures.md); at 1 MiB
// fixed costs blur it. GPU rows skip with the reason on a machine without a GPU.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include "gtl/memory/allocator.h"
#include "gtl/runtime/device.h"
#include "gtl/runtime/stream.h"
#include "gtl/tensor/tensor.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {
namespace {

enum class Direction { HostToDevice, DeviceToHost };
enum class HostMemory { Pageable, Pinned };

// How many pageable copies a pinned row times for its ratio.
constexpr int64_t kMaxBaselineCopies = 200;

#ifdef GTL_WITH_CUDA
// One copy, waited for: the stream is synchronised so the clock sees the whole transfer.
void copy_once(const Tensor& host, const Tensor& device, Direction dir, cudaStream_t stream) {
  const std::size_t n = host.nbytes();
  if (dir == Direction::HostToDevice) {
    GTL_CUDA_CHECK(
        cudaMemcpyAsync(device.data_ptr(), host.data_ptr(), n, cudaMemcpyHostToDevice, stream));
  } else {
    GTL_CUDA_CHECK(
        cudaMemcpyAsync(host.data_ptr(), device.data_ptr(), n, cudaMemcpyDeviceToHost, stream));
  }
  GTL_CUDA_CHECK(cudaStreamSynchronize(stream));
}

// A host buffer of `bytes`, touched so that page faults are not timed.
Tensor host_buffer(int64_t bytes, HostMemory memory) {
  Tensor t =
      Tensor::empty_with({bytes}, DType::UInt8,
                         memory == HostMemory::Pinned ? pinned_allocator() : make_cpu_allocator());
  t.fill_(1.0);
  return t;
}

double seconds_per_copy(const Tensor& host, const Tensor& device, Direction dir,
                        cudaStream_t stream, int64_t copies) {
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < copies; ++i) copy_once(host, device, dir, stream);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / static_cast<double>(copies);
}
#endif

void BM_Copy(benchmark::State& state, Direction dir, HostMemory memory) {
  if (!cuda_available()) {
    state.SkipWithError(("needs a CUDA GPU: " + cuda_unavailable_reason()).c_str());
    return;
  }
#ifdef GTL_WITH_CUDA
  const int64_t bytes = state.range(0);
  const Tensor host = host_buffer(bytes, memory);
  const Tensor device = Tensor::empty({bytes}, DType::UInt8, Device::cuda(0));
  const Stream stream = Stream::create(Device::cuda(0));
  device_synchronize();
  copy_once(host, device, dir, stream.handle());  // warm-up: first-use costs are not timed

  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) copy_once(host, device, dir, stream.handle());
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  state.SetBytesProcessed(state.iterations() * bytes);
  state.SetLabel(format_bytes(bytes));

  if (memory == HostMemory::Pinned) {
    const double pinned_s = elapsed.count() / static_cast<double>(state.iterations());
    const Tensor pageable = host_buffer(bytes, HostMemory::Pageable);
    copy_once(pageable, device, dir, stream.handle());
    const int64_t copies = std::min<int64_t>(state.iterations(), kMaxBaselineCopies);
    const double pageable_s = seconds_per_copy(pageable, device, dir, stream.handle(), copies);
    state.counters["ratio_vs_pageable"] = pageable_s / pinned_s;
  }
#endif
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(1 << 20)->Arg(16 << 20)->Arg(256 << 20)->UseRealTime();
}
BENCHMARK_CAPTURE(BM_Copy, HostToDevice_pageable, Direction::HostToDevice, HostMemory::Pageable)
    ->Apply(sizes);
BENCHMARK_CAPTURE(BM_Copy, HostToDevice_pinned, Direction::HostToDevice, HostMemory::Pinned)
    ->Apply(sizes);
BENCHMARK_CAPTURE(BM_Copy, DeviceToHost_pageable, Direction::DeviceToHost, HostMemory::Pageable)
    ->Apply(sizes);
BENCHMARK_CAPTURE(BM_Copy, DeviceToHost_pinned, Direction::DeviceToHost, HostMemory::Pinned)
    ->Apply(sizes);

}  // namespace
}  // namespace gtl

BENCHMARK_MAIN();
