// The per-thread host synchronisation counters (host_sync.h).
#include "gtl/runtime/host_sync.h"

namespace gtl {
namespace {
thread_local HostSyncCounts counts;
}  // namespace

HostSyncCounts host_sync_counts() {
  return counts;
}

namespace detail {
void count_host_sync(HostSync kind) {
  switch (kind) {
    case HostSync::Stream:
      ++counts.stream;
      break;
    case HostSync::Event:
      ++counts.event;
      break;
    case HostSync::Device:
      ++counts.device;
      break;
  }
}
}  // namespace detail

}  // namespace gtl
