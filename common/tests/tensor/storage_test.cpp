// Storage::release() and allocate(): FSDP frees a buffer's bytes between uses while every view of
// it stays a valid handle. The bytes must really go back to the allocator (its statistics are
// how the memory labs grade ZeRO), views must see the new bytes after re-allocation, and using a
// released view must throw a clear error instead of reading freed memory.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gtl/memory/caching_allocator.h"
#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

namespace gtl {
namespace {

// Runs fn, which must throw an Error whose message contains `expected`.
void expect_error_containing(const std::function<void()>& fn, const std::string& expected,
                             const std::string& what) {
  try {
    fn();
    ADD_FAILURE() << what << ": expected an Error containing \"" << expected << "\", none thrown";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << what << ": the message should contain \"" << expected << "\", got: " << e.what();
  }
}

TEST(Storage, ReleaseReturnsExactlyItsBytesToThePlainAllocator) {
  auto allocator = make_cpu_allocator();
  AllocatorScope scope(allocator);
  Tensor t = Tensor::arange(1000);  // 4000 bytes
  const MemoryStats before = allocator->stats();
  t.storage()->release();
  const MemoryStats after = allocator->stats();
  EXPECT_EQ(before.allocated_bytes - after.allocated_bytes, 4000)
      << "release() must hand the storage's bytes back to its allocator at once";
  EXPECT_EQ(before.reserved_bytes - after.reserved_bytes, 4000)
      << "the plain allocator returns freed bytes to the system";
  EXPECT_EQ(after.num_frees, before.num_frees + 1);
  EXPECT_TRUE(t.storage()->released());
  EXPECT_EQ(t.storage()->nbytes(), 0u) << "a released storage holds no bytes";
  EXPECT_TRUE(t.defined()) << "a tensor viewing a released storage is still a valid handle";
  EXPECT_EQ(t.numel(), 1000) << "release keeps the view's shape";

  t.storage()->release();  // a second release is a no-op
  EXPECT_EQ(allocator->stats().num_frees, after.num_frees) << "release() twice freed twice";

  t.storage()->allocate(4000);
  EXPECT_EQ(allocator->stats().allocated_bytes, before.allocated_bytes)
      << "allocate() takes the same bytes again from the same allocator";
  EXPECT_FALSE(t.storage()->released());
  EXPECT_EQ(t.storage()->nbytes(), 4000u);
}

// With the caching allocator `allocated` counts the bytes requested and drops by exactly those;
// the block, rounded up to 512 bytes, stays reserved in the cache for the next allocation.
TEST(Storage, ReleaseToTheCachingAllocatorKeepsTheRoundedBlockCached) {
  auto allocator = std::dynamic_pointer_cast<CachingAllocator>(make_cpu_caching_allocator());
  ASSERT_NE(allocator, nullptr);
  AllocatorScope scope(allocator);
  Tensor t = Tensor::zeros({1001});  // 4004 bytes, a 4096-byte block
  const auto rounded = static_cast<int64_t>(allocator->block_size(t.data_ptr()));
  ASSERT_EQ(rounded, static_cast<int64_t>(CachingAllocator::round_size(4004)));
  const MemoryStats before = allocator->stats();
  const int64_t cached_before = allocator->cache_info().cached_bytes;
  t.storage()->release();
  const MemoryStats after = allocator->stats();
  EXPECT_EQ(before.allocated_bytes - after.allocated_bytes, 4004)
      << "allocated must drop by the storage's bytes";
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes)
      << "the caching allocator keeps the freed block reserved";
  EXPECT_EQ(allocator->cache_info().cached_bytes - cached_before, rounded)
      << "the released block (rounded to 512 bytes) must be back in the cache, ready for reuse";

  t.storage()->allocate(4004);
  EXPECT_EQ(allocator->stats().allocated_bytes, before.allocated_bytes);
  EXPECT_EQ(allocator->stats().num_system_allocs, before.num_system_allocs)
      << "re-allocating the same size must reuse the cached block, not take a new segment";
}

// Views read the storage's pointer at each use, so a view made before the release sees the new
// bytes after the re-allocation: nothing needs re-pointing.
TEST(Storage, ViewsMadeBeforeTheReleaseSeeTheNewBytes) {
  Tensor flat = Tensor::arange(12);
  const Tensor rows = flat.reshape({3, 4}).slice(1, 3);  // elements 4..11
  const Tensor element = flat.slice(5, 6);
  flat.storage()->release();
  flat.storage()->allocate(flat.nbytes());
  std::vector<float> fresh(12);
  for (int i = 0; i < 12; ++i) fresh[i] = 100.f + static_cast<float>(i);
  flat.copy_(Tensor::from_vector(fresh, {12}));  // new contents, written through the flat tensor
  EXPECT_EQ(rows.to_vector(), std::vector<float>(fresh.begin() + 4, fresh.end()))
      << "a view made before release() must read the re-allocated bytes";
  EXPECT_EQ(element.item(), fresh[5]);
  EXPECT_EQ(rows.storage(), flat.storage()) << "the Storage object itself must survive release()";
}

TEST(Storage, UsingAReleasedViewSaysItWasReleased) {
  Tensor flat = Tensor::zeros({64});
  const Tensor weight = flat.slice(8, 24).reshape({4, 4});
  flat.storage()->release();
  const std::string expected = "released (FSDP freed it)";
  expect_error_containing([&] { weight.data_ptr(); }, expected, "data_ptr() of a released view");
  expect_error_containing([&] { weight.to_vector(); }, expected, "reading a released view");
  expect_error_containing([&] { Tensor(weight).fill_(1.0); }, expected, "writing it");
  expect_error_containing([&] { weight.storage()->data(); }, expected, "Storage::data()");
  expect_error_containing(
      [&] {
        Tensor::zeros({4, 4}).copy_(weight);
      },
      expected, "copying from it");
  EXPECT_NE(weight.str().find("<released>"), std::string::npos)
      << "printing a released tensor must say so rather than throw: " << weight.str();
}

TEST(Storage, AllocateIsOnlyForAReleasedStorageAndViewsMustFit) {
  Tensor flat = Tensor::zeros({16});
  expect_error_containing([&] { flat.storage()->allocate(64); }, "release() it first",
                          "allocate() on a live storage");
  const Tensor tail = flat.slice(12, 16);
  flat.storage()->release();
  flat.storage()->allocate(32);  // smaller than before: elements 8..15 no longer exist
  EXPECT_EQ(flat.slice(0, 8).to_vector().size(), 8u) << "views inside the new bytes still work";
  expect_error_containing([&] { tail.to_vector(); }, "does not fit its storage",
                          "a view past the end of a storage re-allocated smaller");
}

}  // namespace
}  // namespace gtl
