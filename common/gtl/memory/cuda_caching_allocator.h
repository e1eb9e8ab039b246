// The CUDA side of the caching allocator: a SegmentSource over cudaMalloc, cudaFree and CUDA
// events. All the caching logic (pools, best fit, split, merge, stream-aware reuse, OOM retry)
// lives in caching_allocator.h/.cpp and is tested on the CPU; this source only answers
// clang-format off
//   "give me a segment"       cudaMalloc  (nullptr on cudaErrorMemoryAllocation, not a throw,
//                                          so the allocator can release its cache and retry)
//   "take this segment back"  cudaFree
//   "mark this stream's work" cudaEventRecord, polled with cudaEventQuery
//   "wait for everything"     cudaDeviceSynchronize
// clang-format on
// Each call runs with the allocator's device current (DeviceGuard), so a thread working on
// cuda:1 can free memory of cuda:0.
//
// make_cuda_caching_allocator(index) (declared in allocator.h) is what current_allocator() uses
// for cuda:N. A CPU-only build throws gtl::Error naming cuda_unavailable_reason().
#pragma once

#include <memory>

#include "gtl/memory/caching_allocator.h"

namespace gtl {

// The CUDA source on cuda:`device_index` (throws in a CPU-only build or without that GPU).
std::shared_ptr<SegmentSource> make_cuda_segment_source(int device_index);

}  // namespace gtl
