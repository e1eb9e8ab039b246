// Allocator statistics on the CPU, to the byte: what tensors hold (allocated), what was taken from
// the system (reserved), peaks and counters; views that allocate nothing; out-of-memory errors
// that can be caught and recovered from; per-rank allocators on threads; the pinned allocator's
// pageable fallback. Every test installs a fresh allocator so the numbers are its own.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "gtl/memory/allocator.h"
#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

namespace gtl {
namespace {

TEST(CpuAllocator, StatsAreExactToTheByte) {
  auto alloc = make_cpu_allocator();
  AllocatorScope scope(alloc);
  {
    const Tensor a = Tensor::empty({3, 5});             // 15 floats: 60 bytes
    const Tensor b = Tensor::zeros({7}, DType::UInt8);  // 7 bytes
    MemoryStats s = alloc->stats();
    EXPECT_EQ(s.allocated_bytes, 67) << "allocated counts the bytes each tensor asked for";
    EXPECT_EQ(s.reserved_bytes, 67) << "the plain CPU allocator reserves exactly what it hands out";
    EXPECT_EQ(s.num_allocs, 2);
    EXPECT_EQ(s.num_system_allocs, 2);
    {
      const Tensor c = Tensor::empty({100}, DType::Int64);  // 800 bytes, freed at once
    }
    s = alloc->stats();
    EXPECT_EQ(s.allocated_bytes, 67) << "a freed tensor returns its bytes";
    EXPECT_EQ(s.peak_allocated_bytes, 867) << "the peak remembers the moment all three lived";
    EXPECT_EQ(s.peak_reserved_bytes, 867);
    EXPECT_EQ(s.num_frees, 1);
    EXPECT_EQ(s.num_system_frees, 1);

    alloc->reset_peak_stats();
    s = alloc->stats();
    EXPECT_EQ(s.peak_allocated_bytes, 67) << "reset_peak_stats sets the peak to the current value";
    EXPECT_EQ(s.peak_reserved_bytes, 67);
    EXPECT_EQ(s.num_allocs, 3) << "reset_peak_stats keeps the counters";
  }
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, 0);
  EXPECT_EQ(s.num_frees, 3);
  EXPECT_EQ(s.peak_allocated_bytes, 67);

  alloc->reset_stats();
  s = alloc->stats();
  EXPECT_EQ(s.num_allocs, 0) << "reset_stats clears the counters";
  EXPECT_EQ(s.num_frees, 0);
  EXPECT_EQ(s.num_system_allocs, 0);
  EXPECT_EQ(s.peak_allocated_bytes, 0) << "and sets the peaks to the current values";
}

// The event log holds every change of allocated bytes in order: the peak can be derived again from
// it (labs record it for their judges), and recording stops when asked.
TEST(CpuAllocator, EventLogRebuildsThePeak) {
  auto alloc = make_cpu_allocator();
  AllocatorScope scope(alloc);
  const Tensor kept = Tensor::empty({4});  // 16 bytes before the log starts
  std::vector<int64_t> events;
  alloc->reset_peak_stats();
  alloc->record_events(&events);
  {
    const Tensor a = Tensor::empty({10});                    // +40
    { const Tensor b = Tensor::empty({25}, DType::UInt8); }  // +25, -25
    const Tensor c = Tensor::empty({2}, DType::Int64);       // +16
  }                                                          // -16, -40
  alloc->record_events(nullptr);
  { const Tensor d = Tensor::empty({1000}); }  // not recorded
  EXPECT_EQ(events, (std::vector<int64_t>{40, 25, -25, 16, -16, -40}));
  int64_t level = 16, peak = 16;
  for (int64_t e : events) peak = std::max(peak, level += e);
  EXPECT_EQ(peak, 16 + 65) << "the largest prefix sum from the level at the start";
  alloc->reset_peak_stats();
}

// EventLogScope stops the log however its scope ends, an exception included: the allocator must
// not append to a log that is gone.
TEST(CpuAllocator, EventLogScopeStopsTheLogOnEveryExit) {
  auto alloc = make_cpu_allocator();
  AllocatorScope scope(alloc);
  std::vector<int64_t> events;
  try {
    const EventLogScope log(*alloc, &events);
    { const Tensor a = Tensor::empty({3}); }  // +12, -12
    throw Error("a step that fails");
  } catch (const Error&) {
  }
  { const Tensor b = Tensor::empty({5}); }  // not recorded
  EXPECT_EQ(events, (std::vector<int64_t>{12, -12})) << "the log stopped with its scope";
  {
    const Tensor c = Tensor::empty({1});  // made before the log starts, freed after it stopped
    const EventLogScope stop(*alloc);     // no log given: the owner starts it when it chooses
    alloc->record_events(&events);
    const Tensor d = Tensor::empty({2});  // +8, -8
  }
  EXPECT_EQ(events, (std::vector<int64_t>{12, -12, 8, -8}));
}

TEST(CpuAllocator, EmptyTensorsAllocateNothing) {
  auto alloc = make_cpu_allocator();
  AllocatorScope scope(alloc);
  const Tensor t = Tensor::empty({0, 5});
  EXPECT_EQ(alloc->stats().num_allocs, 0) << "a 0-byte tensor needs no memory";
  EXPECT_EQ(alloc->stats().allocated_bytes, 0);
}

TEST(CpuAllocator, ViewsAndCopiesOfTheHandleDoNotAllocate) {
  auto alloc = make_cpu_allocator();
  AllocatorScope scope(alloc);
  Tensor a = Tensor::zeros({4, 6});  // 96 bytes
  const MemoryStats before = alloc->stats();
  const Tensor r = a.reshape({6, 4});
  const Tensor f = a.flatten();
  const Tensor s = a.slice(1, 3);
  const Tensor row = a.select(2);
  Tensor same = a;
  EXPECT_EQ(alloc->stats().num_allocs, before.num_allocs)
      << "reshape, flatten, slice, select and copying a Tensor handle share the storage";
  EXPECT_EQ(alloc->stats().allocated_bytes, 96);

  a = Tensor();
  EXPECT_EQ(alloc->stats().allocated_bytes, 96)
      << "the storage lives while any view of it lives (here: r, f, s, row, same)";

  const Tensor copy = same.clone();
  EXPECT_EQ(alloc->stats().allocated_bytes, 192) << "clone() copies: it allocates";
}

TEST(CpuAllocator, StorageIsFreedWithItsLastView) {
  auto alloc = make_cpu_allocator();
  AllocatorScope scope(alloc);
  {
    const Tensor a = Tensor::empty({10});
    const Tensor v = a.slice(2, 5);
  }
  EXPECT_EQ(alloc->stats().allocated_bytes, 0) << "freeing returns every byte";
  EXPECT_EQ(alloc->stats().num_frees, 1) << "one storage, one free, however many views";
}

TEST(OutOfMemory, LimitThrowsAPyTorchStyleError) {
  auto alloc = make_cpu_allocator();
  alloc->set_memory_limit(1000);
  AllocatorScope scope(alloc);
  Tensor a = Tensor::empty({200});  // 800 bytes
  try {
    const Tensor b = Tensor::empty({100});  // 400 more: 1200 > 1000
    FAIL() << "expected OutOfMemoryError: 800 B held, 400 B asked, limit 1000 B";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    for (const char* part : {"CPU out of memory on cpu", "Tried to allocate 400 B",
                             "800 B allocated", "800 B reserved", "limit 1000 B"}) {
      EXPECT_NE(msg.find(part), std::string::npos)
          << "the message should name requested/allocated/reserved/limit; missing \"" << part
          << "\" in: " << msg;
    }
    EXPECT_EQ(e.requested_bytes(), 400);
    EXPECT_EQ(e.device(), Device::cpu());
  }
  MemoryStats s = alloc->stats();
  EXPECT_EQ(s.num_ooms, 1);
  EXPECT_EQ(s.allocated_bytes, 800) << "a failed allocation changes nothing";

  // Recovery: free what is held, and the same request fits.
  a = Tensor();
  const Tensor b = Tensor::empty({100});
  EXPECT_EQ(alloc->stats().allocated_bytes, 400) << "after freeing, allocation works again";
  EXPECT_THROW(Tensor::empty({200}), Error) << "OutOfMemoryError is a gtl::Error";
}

TEST(PerRank, EachThreadSeesOnlyItsOwnAllocator) {
  auto rank0 = make_cpu_allocator();
  auto rank1 = make_cpu_allocator();
  auto global = current_allocator(Device::cpu());
  const MemoryStats global_before = global->stats();
  Tensor kept_by_rank1;

  auto run = [](std::shared_ptr<Allocator> mine, int64_t floats, Tensor* keep) {
    AllocatorScope scope(mine);
    EXPECT_EQ(current_allocator(Device::cpu()), mine) << "the scope installs this rank's allocator";
    const Tensor t = Tensor::empty({floats});
    const Tensor u = Tensor::empty({floats});
    if (keep != nullptr) *keep = t;
  };
  std::thread t0(run, rank0, 10, nullptr);          // 2 x 40 bytes, both freed
  std::thread t1(run, rank1, 100, &kept_by_rank1);  // 2 x 400 bytes, one kept
  t0.join();
  t1.join();

  EXPECT_EQ(rank0->stats().peak_allocated_bytes, 80) << "rank 0 sees only its own tensors";
  EXPECT_EQ(rank0->stats().allocated_bytes, 0);
  EXPECT_EQ(rank1->stats().peak_allocated_bytes, 800) << "rank 1 sees only its own tensors";
  EXPECT_EQ(rank1->stats().allocated_bytes, 400) << "rank 1's kept tensor is still charged to it";
  EXPECT_EQ(&kept_by_rank1.storage()->allocator(), rank1.get())
      << "a tensor remembers the allocator it came from";
  EXPECT_EQ(current_allocator(Device::cpu()), global) << "scopes end with their thread";

  kept_by_rank1 = Tensor();  // freed on the main thread, which has no scope
  EXPECT_EQ(rank1->stats().allocated_bytes, 0)
      << "freeing on another thread returns the bytes to the allocator they came from";
  EXPECT_EQ(global->stats().num_allocs, global_before.num_allocs);
  EXPECT_EQ(global->stats().num_frees, global_before.num_frees)
      << "the process-wide allocator was never charged";
}

TEST(PinnedAllocator, FallsBackToPageableWithoutAGpuAndCountsExactly) {
  auto pinned = make_pinned_allocator();
  if (cuda_available()) {
    EXPECT_EQ(pinned->name(), "pinned");
  } else {
    EXPECT_NE(pinned->name().find("pageable fallback"), std::string::npos)
        << "without a GPU the pinned allocator says it hands out pageable memory; got "
        << pinned->name();
  }
  {
    Tensor t = Tensor::empty_with({1000}, DType::UInt8, pinned);
    t.fill_(3.0);
    EXPECT_EQ(t.to_vector()[999], 3.f) << "the memory is usable";
    EXPECT_EQ(pinned->stats().allocated_bytes, 1000);
    EXPECT_EQ(pinned->stats().reserved_bytes, 1000);
  }
  EXPECT_EQ(pinned->stats().allocated_bytes, 0);
  EXPECT_EQ(pinned->stats().num_system_frees, 1);
}

}  // namespace
}  // namespace gtl
