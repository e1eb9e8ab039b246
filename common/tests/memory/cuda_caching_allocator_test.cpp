// The CUDA caching allocator through tensors on cuda:0: exact statistics, reuse without
// cudaMalloc, record_stream across two streams, out-of-memory from a limit and from the device,
// and empty_cache. The caching logic itself is tested on the CPU (caching_allocator_test); this
// checks the CUDA backend under it. Each test installs a fresh allocator so the numbers are its
// own.
#include "gtl/memory/cuda_caching_allocator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

#include "gtl/memory/caching_allocator.h"
#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

#ifdef GTL_WITH_CUDA
#include "gtl/runtime/cuda_check.h"
#endif

namespace gtl {
namespace {

constexpr int64_t kMiB = 1 << 20;
const Device kGpu = Device::cuda(0);

std::shared_ptr<CachingAllocator> fresh_gpu_allocator() {
  auto alloc = std::dynamic_pointer_cast<CachingAllocator>(make_cuda_caching_allocator(0));
  EXPECT_NE(alloc, nullptr) << "make_cuda_caching_allocator should build a CachingAllocator";
  return alloc;
}

TEST(CudaCachingAllocator, StatsAreExactThroughTensors) {
  GTL_REQUIRE_GPU();
  auto alloc = fresh_gpu_allocator();
  AllocatorScope scope(alloc);
  {
    const Tensor t = Tensor::zeros({1000}, DType::Float32, kGpu);
    EXPECT_EQ(t.to_vector(), std::vector<float>(1000, 0.f)) << "the memory is usable on the GPU";
    MemoryStats s = alloc->stats();
    EXPECT_EQ(s.allocated_bytes, 4000) << "allocated: the bytes the tensor asked for";
    EXPECT_EQ(s.reserved_bytes, 2 * kMiB) << "reserved: one 2 MiB small-pool segment";
    EXPECT_EQ(s.num_system_allocs, 1);
  }
  const MemoryStats s = alloc->stats();
  EXPECT_EQ(s.allocated_bytes, 0);
  EXPECT_EQ(s.reserved_bytes, 2 * kMiB) << "the segment stays cached";
  EXPECT_EQ(s.peak_allocated_bytes, 4000);
}

TEST(CudaCachingAllocator, LoopReusesWithoutCudaMalloc) {
  GTL_REQUIRE_GPU();
  auto alloc = fresh_gpu_allocator();
  AllocatorScope scope(alloc);
  auto step = [] {
    const Tensor a = Tensor::empty({1024}, DType::Float32, kGpu);              // 4 KiB
    const Tensor b = Tensor::empty({256 * 1024}, DType::Float32, kGpu);        // 1 MiB
    const Tensor c = Tensor::empty({16 * 1024 * 1024}, DType::Float32, kGpu);  // 64 MiB
    return c.data_ptr();
  };
  void* first = step();
  const int64_t warm = alloc->stats().num_system_allocs;
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(step(), first) << "step " << i << ": the cached 64 MiB block is reused";
  }
  EXPECT_EQ(alloc->stats().num_system_allocs, warm) << "no cudaMalloc after the warm-up step";
  EXPECT_EQ(alloc->stats().allocated_bytes, 0);
}

#if defined(GTL_WITH_CUDA) && !defined(GTL_EMULATED_CUDA)
// Holds a stream busy until the host opens the gate: the side stream's "work" is still running.
void CUDART_CB wait_for_gate(void* gate) {
  auto* open = static_cast<std::atomic<bool>*>(gate);
  while (!open->load()) {
  }
}
#endif

TEST(CudaCachingAllocator, RecordStreamDelaysReuseUntilTheOtherStreamIsDone) {
  GTL_REQUIRE_GPU();
#ifdef GTL_EMULATED_CUDA
  GTEST_SKIP() << "needs a stream still busy while the host goes on; the CPU emulator finishes "
                  "every call before it returns (real stream concurrency needs a GPU)";
#elif defined(GTL_WITH_CUDA)
  auto alloc = fresh_gpu_allocator();
  AllocatorScope scope(alloc);
  const Stream side = Stream::create(kGpu);
  static std::atomic<bool> gate;  // static: outlives the callback even if the test ends early
  gate.store(false);
  struct OpenOnExit {  // never leave the side stream spinning, even when a check throws
    std::atomic<bool>& flag;
    ~OpenOnExit() { flag.store(true); }
  } open_on_exit{gate};
  GTL_CUDA_CHECK(cudaLaunchHostFunc(side.handle(), wait_for_gate, &gate));

  Tensor t = Tensor::empty({1024}, DType::Float32, kGpu);  // allocated on the default stream
  void* p = t.storage()->data();
  alloc->record_stream(p, side);  // the (blocked) side stream uses t
  t = Tensor();                   // freed on the host: the side stream may still read it
  EXPECT_EQ(alloc->cache_info().blocks_awaiting_events, 1);

  const Tensor u = Tensor::empty({1024}, DType::Float32, kGpu);
  EXPECT_NE(u.storage()->data(), p) << "the side stream has not finished: p must not be reused";

  gate.store(true);
  side.synchronize();
  const Tensor v = Tensor::empty({1024}, DType::Float32, kGpu);
  EXPECT_EQ(v.storage()->data(), p) << "after the side stream finished, p is reused";
  EXPECT_EQ(alloc->cache_info().blocks_awaiting_events, 0);
#endif
}

TEST(CudaCachingAllocator, LimitThrowsOutOfMemoryAndRecovers) {
  GTL_REQUIRE_GPU();
  auto alloc = fresh_gpu_allocator();
  alloc->set_memory_limit(64 * kMiB);
  AllocatorScope scope(alloc);
  Tensor a = Tensor::empty({12 * 1024 * 1024}, DType::Float32, kGpu);  // 48 MiB
  try {
    const Tensor b = Tensor::empty({8 * 1024 * 1024}, DType::Float32, kGpu);  // 32 MiB more
    FAIL() << "expected OutOfMemoryError: 48 MiB + 32 MiB > 64 MiB limit";
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("CUDA out of memory on cuda:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("limit 64.00 MiB"), std::string::npos) << msg;
  }
  a = Tensor();
  const Tensor b = Tensor::empty({8 * 1024 * 1024}, DType::Float32, kGpu);
  EXPECT_EQ(alloc->stats().allocated_bytes, 32 * kMiB) << "after freeing, allocation recovers";
}

TEST(CudaCachingAllocator, DeviceOutOfMemoryIsCatchableAndLeavesCudaUsable) {
  GTL_REQUIRE_GPU();
  auto alloc = fresh_gpu_allocator();
  AllocatorScope scope(alloc);
  const int64_t too_much = 2 * device_properties(0).total_memory_bytes;
  EXPECT_THROW(alloc->allocate(static_cast<std::size_t>(too_much)), OutOfMemoryError)
      << "cudaMalloc's out-of-memory becomes OutOfMemoryError, not a CudaError";
  const Tensor t = Tensor::ones({1000}, DType::Float32, kGpu);
  EXPECT_EQ(t.to_vector(), std::vector<float>(1000, 1.f))
      << "the failed cudaMalloc left no sticky error behind";
}

TEST(CudaCachingAllocator, EmptyCacheReturnsMemoryToTheDevice) {
  GTL_REQUIRE_GPU();
  auto alloc = fresh_gpu_allocator();
  AllocatorScope scope(alloc);
  { const Tensor t = Tensor::empty({16 * 1024 * 1024}, DType::Float32, kGpu); }
  { const Tensor t = Tensor::empty({100}, DType::Float32, kGpu); }
  EXPECT_EQ(alloc->stats().reserved_bytes, 66 * kMiB);
  alloc->empty_cache();
  const MemoryStats s = alloc->stats();
  EXPECT_EQ(s.reserved_bytes, 0) << "empty_cache gives every free segment back (cudaFree)";
  EXPECT_EQ(s.num_system_frees, s.num_system_allocs);
}

}  // namespace
}  // namespace gtl
