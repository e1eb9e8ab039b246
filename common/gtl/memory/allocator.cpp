#include "gtl/memory/allocator.h"

#include <array>
#include <cstdio>

namespace gtl {

std::string format_bytes(int64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while ((v >= 1024.0 || v <= -1024.0) && u < 4) v /= 1024.0, ++u;
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  }
  return buf;
}

OutOfMemoryError::OutOfMemoryError(Device device, int64_t requested, const MemoryStats& stats,
                                   int64_t limit, const std::string& detail)
    : Error((device.is_cuda() ? "CUDA" : "CPU") + std::string(" out of memory on ") + device.str() +
            ". Tried to allocate " + format_bytes(requested) + "; " +
            format_bytes(stats.allocated_bytes) + " allocated; " +
            format_bytes(stats.reserved_bytes) + " reserved; limit " +
            (limit > 0 ? format_bytes(limit) : std::string("none (device memory)")) +
            (detail.empty() ? "" : "; " + detail) +
            ". Free tensors you no longer need, use a smaller batch, or recompute activations."),
      device_(device),
      requested_(requested) {}

// ---- statistics ---------------------------------------------------------------------------------

MemoryStats Allocator::stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

void Allocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

void Allocator::reset_stats() {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  MemoryStats fresh;
  fresh.allocated_bytes = fresh.peak_allocated_bytes = stats_.allocated_bytes;
  fresh.reserved_bytes = fresh.peak_reserved_bytes = stats_.reserved_bytes;
  stats_ = fresh;
}

void Allocator::set_memory_limit(int64_t bytes) {
  GTL_CHECK(bytes >= 0, "set_memory_limit: negative limit " << bytes);
  std::lock_guard<std::mutex> lock(stats_mutex_);
  limit_ = bytes;
}

int64_t Allocator::memory_limit() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return limit_;
}

void Allocator::note_alloc(int64_t bytes) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_.allocated_bytes += bytes;
  stats_.num_allocs += 1;
  stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  if (events_ != nullptr) events_->push_back(bytes);
}

void Allocator::note_free(int64_t bytes) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_.allocated_bytes -= bytes;
  stats_.num_frees += 1;
  if (events_ != nullptr) events_->push_back(-bytes);
}

void Allocator::record_events(std::vector<int64_t>* log) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  events_ = log;
}

void Allocator::note_system_alloc(int64_t bytes) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_.reserved_bytes += bytes;
  stats_.num_system_allocs += 1;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
}

void Allocator::note_system_free(int64_t bytes) {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_.reserved_bytes -= bytes;
  stats_.num_system_frees += 1;
}

bool Allocator::would_exceed_limit(int64_t bytes) const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return limit_ > 0 && stats_.reserved_bytes + bytes > limit_;
}

void Allocator::throw_oom(int64_t requested, const std::string& detail) {
  MemoryStats snapshot;
  int64_t limit;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_.num_ooms += 1;
    snapshot = stats_;
    limit = limit_;
  }
  throw OutOfMemoryError(device_, requested, snapshot, limit, detail);
}

// ---- current allocator per device, per thread ---------------------------------------------------

namespace {

std::mutex defaults_mutex;
std::shared_ptr<Allocator> default_cpu;
std::array<std::shared_ptr<Allocator>, 64> default_cuda;

thread_local std::shared_ptr<Allocator> scoped_cpu;
thread_local std::shared_ptr<Allocator> scoped_cuda;

std::shared_ptr<Allocator>& scoped_slot(Device device) {
  return device.is_cuda() ? scoped_cuda : scoped_cpu;
}

}  // namespace

std::shared_ptr<Allocator> current_allocator(Device device) {
  const auto& scoped = scoped_slot(device);
  if (scoped && scoped->device() == device) return scoped;
  std::lock_guard<std::mutex> lock(defaults_mutex);
  if (device.is_cpu()) {
    if (!default_cpu) default_cpu = make_cpu_allocator();
    return default_cpu;
  }
  GTL_CHECK(device.index() >= 0 && device.index() < static_cast<int>(default_cuda.size()),
            "no allocator for " << device);
  auto& slot = default_cuda[device.index()];
  if (!slot) slot = make_cuda_caching_allocator(device.index());
  return slot;
}

std::shared_ptr<Allocator> pinned_allocator() {
  static std::shared_ptr<Allocator> pinned = make_pinned_allocator();
  return pinned;
}

AllocatorScope::AllocatorScope(std::shared_ptr<Allocator> allocator)
    : device_(allocator->device()) {
  auto& slot = scoped_slot(device_);
  previous_ = slot;
  slot = std::move(allocator);
}

AllocatorScope::~AllocatorScope() {
  scoped_slot(device_) = std::move(previous_);
}

}  // namespace gtl
