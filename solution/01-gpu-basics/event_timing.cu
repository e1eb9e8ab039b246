// Lab 01, TODO 4: timing GPU work.
//
// A kernel launch returns as soon as the work is queued. A host clock around launches without a
// synchronisation measures only the cost of queuing them (microseconds), not the GPU's work.
// Either synchronise before stopping the clock, or record CUDA events in the stream around the
// work: the GPU timestamps them when it reaches them, and cudaEventElapsedTime gives GPU time.
#include <chrono>

#include "check_cuda.h"
#include "gpu_basics.h"

namespace lab01 {

namespace {
[[maybe_unused]] double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}
}  // namespace

LaunchTiming time_vector_add(int64_t n, int repeats) {
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  LAB_CHECK(cudaMalloc(&a, bytes));
  LAB_CHECK(cudaMalloc(&b, bytes));
  LAB_CHECK(cudaMalloc(&c, bytes));
  LAB_CHECK(cudaMemset(a, 0, bytes));
  LAB_CHECK(cudaMemset(b, 0, bytes));
  vector_add_device(a, b, c, n, nullptr);  // warm-up: first launch loads the module
  LAB_CHECK(cudaDeviceSynchronize());

  LaunchTiming t{};
  // SOLUTION(lab01) step 4
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) vector_add_device(a, b, c, n, nullptr);
  t.host_ms_without_sync = ms_since(start);
  LAB_CHECK(cudaDeviceSynchronize());

  start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) vector_add_device(a, b, c, n, nullptr);
  LAB_CHECK(cudaDeviceSynchronize());
  t.host_ms_with_sync = ms_since(start);

  cudaEvent_t begin, end;
  LAB_CHECK(cudaEventCreate(&begin));
  LAB_CHECK(cudaEventCreate(&end));
  LAB_CHECK(cudaEventRecord(begin, nullptr));
  for (int r = 0; r < repeats; ++r) vector_add_device(a, b, c, n, nullptr);
  LAB_CHECK(cudaEventRecord(end, nullptr));
  LAB_CHECK(cudaEventSynchronize(end));
  LAB_CHECK(cudaEventElapsedTime(&t.event_ms, begin, end));

  LAB_CHECK(cudaEventDestroy(begin));
  LAB_CHECK(cudaEventDestroy(end));
  // END SOLUTION(lab01)
  LAB_CHECK(cudaFree(a));
  LAB_CHECK(cudaFree(b));
  LAB_CHECK(cudaFree(c));
  return t;
}

}  // namespace lab01
