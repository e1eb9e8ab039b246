// Lab 01, TODO 5: pageable vs pinned host memory.
//
// The GPU's copy engines read and write host memory by DMA, which needs physical pages that the
// OS cannot move: pinned (page-locked) memory, from cudaMallocHost. From ordinary pageable memory
// (malloc, new, std::vector) the driver first copies into its own pinned staging buffer, chunk by
// chunk, so the transfer is slower and cudaMemcpyAsync cannot return before it is done.
#include <cstdlib>
#include <cstring>

#include "check_cuda.h"
#include "gpu_basics.h"

namespace lab01 {

void* allocate_host(int64_t bytes, bool pinned) {
  // SOLUTION(lab01) step 5a
  void* host = nullptr;
  if (pinned) {
    LAB_CHECK(cudaMallocHost(&host, static_cast<size_t>(bytes)));
  } else {
    host = std::malloc(static_cast<size_t>(bytes));
    if (!host) throw std::runtime_error("allocate_host: malloc failed");
  }
  // END SOLUTION(lab01)
  return host;
}

void free_host(void* ptr, bool pinned) {
  // SOLUTION(lab01) step 5a
  if (pinned) {
    LAB_CHECK(cudaFreeHost(ptr));
  } else {
    std::free(ptr);
  }
  // END SOLUTION(lab01)
}

double copy_bandwidth_gbs(int64_t bytes, bool pinned, bool host_to_device, int repeats) {
  const size_t n = static_cast<size_t>(bytes);
  void* host = allocate_host(bytes, pinned);
  std::memset(host, 1, n);  // touch every page so the OS really backs it
  void* device = nullptr;
  LAB_CHECK(cudaMalloc(&device, n));

  void* dst = host_to_device ? device : host;
  const void* src = host_to_device ? host : device;
  const cudaMemcpyKind kind = host_to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  LAB_CHECK(cudaMemcpy(dst, src, n, kind));  // warm-up

  float ms = 0;
  // SOLUTION(lab01) step 5b
  cudaEvent_t begin, end;
  LAB_CHECK(cudaEventCreate(&begin));
  LAB_CHECK(cudaEventCreate(&end));
  LAB_CHECK(cudaEventRecord(begin, nullptr));
  for (int r = 0; r < repeats; ++r) LAB_CHECK(cudaMemcpyAsync(dst, src, n, kind, nullptr));
  LAB_CHECK(cudaEventRecord(end, nullptr));
  LAB_CHECK(cudaEventSynchronize(end));
  LAB_CHECK(cudaEventElapsedTime(&ms, begin, end));

  LAB_CHECK(cudaEventDestroy(begin));
  LAB_CHECK(cudaEventDestroy(end));
  // END SOLUTION(lab01)
  LAB_CHECK(cudaFree(device));
  free_host(host, pinned);
  return static_cast<double>(bytes) * repeats / (ms * 1e-3) / 1e9;
}

}  // namespace lab01
