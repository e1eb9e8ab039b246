// Host synchronisations: the points where the host thread stops until the GPU has finished work.
//
//   const HostSyncCounts before = host_sync_counts();
//   float loss = logits_loss.item();                  // a copy to the host, then a stream sync
//   const HostSyncCounts during = host_sync_counts() - before;   // during.stream == 1
//
// Why count them: a training step launches its kernels asynchronously, and the GPU runs them
// while the host is already launching the next ones. Every synchronisation (reading a scalar
// with item(), a blocking copy to the host, an explicit stream, event or device sync) drains
// that queue: the GPU idles while the host catches up, and the step becomes as slow as the
// host's launches. Profilers show them as gaps; the counts show them exactly, on any machine.
//
// What is counted: each call that really waits for the GPU: cudaStreamSynchronize (Stream::
// synchronize, and so every blocking copy_ and item() that involves the GPU), cudaEventSynchronize
// (Event::synchronize; Event::elapsed_ms only when its end event is not complete yet) and
// cudaDeviceSynchronize (device_synchronize, the caching allocator's
// empty_cache). Work on CPU tensors waits for nothing and counts nothing. On the CPU emulator
// (common/emulator) the same calls count the same way, so a test of sync counts runs in CI.
//
// Counts are per host thread (each in-process rank of the communicator is a thread) and only
// grow; take differences. A stream's own teardown sync is not counted.
#pragma once

#include <cstdint>

namespace gtl {

struct HostSyncCounts {
  int64_t stream = 0;  // cudaStreamSynchronize
  int64_t event = 0;   // cudaEventSynchronize
  int64_t device = 0;  // cudaDeviceSynchronize

  int64_t total() const { return stream + event + device; }
  HostSyncCounts operator-(const HostSyncCounts& o) const {
    return {stream - o.stream, event - o.event, device - o.device};
  }
  HostSyncCounts& operator+=(const HostSyncCounts& o) {
    stream += o.stream, event += o.event, device += o.device;
    return *this;
  }
  bool operator==(const HostSyncCounts&) const = default;
};

// This thread's synchronisations since it started.
HostSyncCounts host_sync_counts();

namespace detail {
enum class HostSync { Stream, Event, Device };
// Called by the runtime next to each waiting CUDA call (after it returned successfully).
void count_host_sync(HostSync kind);
}  // namespace detail

}  // namespace gtl
