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
  // TODO(lab01) step 5a: pinned memory comes from cudaMallocHost (wrap it in LAB_CHECK),
  // pageable memory from std::malloc. Until then both are pageable, and the pinned-vs-pageable
  // benchmark shows no difference. About 7 lines.
  (void)pinned;
  void* host = std::malloc(static_cast<size_t>(bytes));
  if (!host) throw std::runtime_error("allocate_host: malloc failed");
  // END TODO(lab01)
  return host;
}

void free_host(void* ptr, bool pinned) {
  // TODO(lab01) step 5a: cudaFreeHost for pinned memory, std::free for pageable. About 5 lines.
  (void)pinned;
  std::free(ptr);
  // END TODO(lab01)
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
  // TODO(lab01) step 5b: time `repeats` copies cudaMemcpyAsync(dst, src, n, kind, nullptr) with
  // two CUDA events (as in step 4) and store the elapsed milliseconds in `ms`. The allocation
  // above already chose pinned (cudaMallocHost) or pageable (malloc) host memory. About 4 lines.
  (void)dst, (void)src, (void)kind;
  // END TODO(lab01)
  LAB_CHECK(cudaFree(device));
  free_host(host, pinned);
  return static_cast<double>(bytes) * repeats / (ms * 1e-3) / 1e9;
}

}  // namespace lab01
