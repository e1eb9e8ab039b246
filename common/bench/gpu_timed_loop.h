// How the labs' benchmarks time GPU work: one function, so that every lab measures the same way.
//
//   timed_loop(state, fn)  per iteration: flush L2 (not timed), synchronise the device, record an
//                          event, run fn, synchronise the device, record an event; the elapsed
//                          time between the events is the iteration's manual time.
//
// Why each step: the flush writes a buffer twice the L2 size, so fn reads its inputs from HBM as
// in a real training step, not from the cache the previous iteration warmed. Events on the legacy
// default stream do not wait for streams created with cudaStreamNonBlocking, so events alone
// would miss work fn leaves running on such a stream; synchronising the device before `begin`
// keeps earlier work out of the interval, and before `end` puts the work of every stream inside
// it. The host round trip this adds, a few microseconds, is in both benchmarks of every ratio.
// An exception from fn ends the benchmark with its message instead of terminating the program.
#pragma once

#ifdef GTL_WITH_CUDA

#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <exception>
#include <string>

#include "gtl/runtime/device.h"

namespace gtl::bench {

// True (and the benchmark marked as failed with the reason) when no GPU is usable.
inline bool skip_without_gpu(benchmark::State& state) {
  if (cuda_available()) return false;
  state.SkipWithError(("needs a CUDA GPU: " + cuda_unavailable_reason()).c_str());
  return true;
}

// Writes a buffer twice the size of L2, so that nothing of the previous iteration stays cached.
class L2Flush {
 public:
  L2Flush() {
    int device = 0, l2 = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    bytes_ = 2 * static_cast<size_t>(l2);
    if (cudaMalloc(&buffer_, bytes_) != cudaSuccess) buffer_ = nullptr, bytes_ = 0;
  }
  ~L2Flush() { cudaFree(buffer_); }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  void operator()() {
    if (buffer_) cudaMemsetAsync(buffer_, 0, bytes_, nullptr);
  }

 private:
  void* buffer_ = nullptr;
  size_t bytes_ = 0;
};

template <typename Fn>
void timed_loop(benchmark::State& state, Fn&& fn) {
  L2Flush flush;
  cudaEvent_t begin, end;
  cudaEventCreate(&begin);
  cudaEventCreate(&end);
  try {
    fn();  // warm-up: first-launch costs (module loading, allocator growth) stay out of the timing
    for (auto _ : state) {
      flush();
      cudaDeviceSynchronize();
      cudaEventRecord(begin, nullptr);
      fn();
      cudaDeviceSynchronize();
      cudaEventRecord(end, nullptr);
      cudaEventSynchronize(end);
      float ms = 0;
      cudaEventElapsedTime(&ms, begin, end);
      state.SetIterationTime(ms * 1e-3);
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess && !state.error_occurred())
    state.SkipWithError((std::string("a CUDA call failed: ") + cudaGetErrorName(error) + ": " +
                         cudaGetErrorString(error))
                            .c_str());
}

}  // namespace gtl::bench

#endif  // GTL_WITH_CUDA
