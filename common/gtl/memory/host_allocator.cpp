// Host allocators: plain (pageable) memory and page-locked (pinned) memory.
//
// Why pinned memory matters: the GPU's copy engines can only read page-locked memory. A copy
// from ordinary (pageable) memory is staged by the driver through a pinned bounce buffer, which
// costs bandwidth and makes cudaMemcpyAsync synchronous. Lab 01 step 5 measures the difference.
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>

#include "gtl/memory/allocator.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {

namespace {

constexpr std::size_t kHostAlignment = 256;  // matches cudaMalloc, good for any vector width

// Remembers each live pointer's requested size so frees are accounted to the byte.
class HostAllocatorBase : public Allocator {
 public:
  HostAllocatorBase() : Allocator(Device::cpu()) {}

  void* allocate(std::size_t bytes, const Stream&) override {
    if (bytes == 0) return nullptr;
    const auto n = static_cast<int64_t>(bytes);
    if (would_exceed_limit(n)) throw_oom(n);
    void* p = system_alloc(bytes);
    if (!p) throw_oom(n, "the system refused the allocation");
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sizes_[p] = bytes;
    }
    note_system_alloc(n);
    note_alloc(n);
    return p;
  }

  void deallocate(void* ptr) override {
    if (!ptr) return;
    std::size_t bytes;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = sizes_.find(ptr);
      GTL_CHECK(it != sizes_.end(), name() << ": deallocate of a pointer it did not allocate");
      bytes = it->second;
    }
    system_free(ptr);  // forgotten only once freed: if this throws, it stays live and counted
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sizes_.erase(ptr);
    }
    note_free(static_cast<int64_t>(bytes));
    note_system_free(static_cast<int64_t>(bytes));
  }

 protected:
  virtual void* system_alloc(std::size_t bytes) = 0;
  virtual void system_free(void* ptr) = 0;

 private:
  std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;
};

class CpuAllocator final : public HostAllocatorBase {
 public:
  std::string name() const override { return "cpu"; }

 protected:
  void* system_alloc(std::size_t bytes) override {
    return ::operator new(bytes, std::align_val_t(kHostAlignment), std::nothrow);
  }
  void system_free(void* ptr) override { ::operator delete(ptr, std::align_val_t(kHostAlignment)); }
};

// Falls back to pageable memory when no GPU is usable (a CPU-only build, or no device), so
// code that asks for pinned staging buffers still runs on a laptop; name() says which it is.
class PinnedAllocator final : public HostAllocatorBase {
 public:
  std::string name() const override {
    return page_locked_ ? "pinned"
                        : "pinned (pageable fallback: " + cuda_unavailable_reason() + ")";
  }

 protected:
  void* system_alloc(std::size_t bytes) override {
#ifdef GTL_WITH_CUDA
    if (page_locked_) {
      void* p = nullptr;
      if (cudaMallocHost(&p, bytes) == cudaSuccess) return p;
      (void)cudaGetLastError();
      return nullptr;
    }
#endif
    return ::operator new(bytes, std::align_val_t(kHostAlignment), std::nothrow);
  }

  void system_free(void* ptr) override {
#ifdef GTL_WITH_CUDA
    if (page_locked_) {
      GTL_CUDA_CHECK(cudaFreeHost(ptr));
      return;
    }
#endif
    ::operator delete(ptr, std::align_val_t(kHostAlignment));
  }

 private:
  const bool page_locked_ = cuda_available();
};

}  // namespace

std::shared_ptr<Allocator> make_cpu_allocator() {
  return std::make_shared<CpuAllocator>();
}
std::shared_ptr<Allocator> make_pinned_allocator() {
  return std::make_shared<PinnedAllocator>();
}

}  // namespace gtl
