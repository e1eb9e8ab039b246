// DataLoader on a GPU: batches staged in pinned memory, copied on the loader's copy stream, and
// made safe to use by Batch::wait(); they must hold exactly the bytes of the CPU loader's batches.
#include <gtest/gtest.h>

#include <cstring>

#include "gtl/data/data_loader.h"
#include "gtl/data/synthetic_digits.h"
#include "gtl_test.h"

namespace gtl::data {
namespace {

bool same_bits(const Tensor& gpu, const Tensor& cpu) {
  const Tensor host = gpu.to(Device::cpu());
  return host.shape() == cpu.shape() && host.dtype() == cpu.dtype() &&
         std::memcmp(host.data_ptr(), cpu.data_ptr(), cpu.nbytes()) == 0;
}

TEST(DataLoaderGpu, AsyncCopiesMatchTheCpuBatches) {
  GTL_REQUIRE_GPU();
  auto digits = std::make_shared<SyntheticDigits>(300);
  const int64_t pinned_before = pinned_allocator()->stats().allocated_bytes;
  DataLoader gpu(digits, {.batch_size = 32, .seed = 4, .device = Device::cuda(0)});
  EXPECT_GE(pinned_allocator()->stats().allocated_bytes - pinned_before, 2 * 32 * 784 * 4)
      << "the loader should stage batches in pinned host buffers (two of them)";
  DataLoader cpu(digits, {.batch_size = 32, .seed = 4});
  const Stream stream = Stream::create(Device::cuda(0));
  const StreamScope scope(stream);  // the "training" stream, not the loader's copy stream
  for (int epoch = 0; epoch < 2; ++epoch) {
    int batches = 0;
    while (std::optional<Batch> g = gpu.next()) {
      std::optional<Batch> c = cpu.next();
      ASSERT_TRUE(c.has_value()) << "GPU and CPU loaders must have the same number of batches";
      ASSERT_NE(g->ready, nullptr) << "a GPU batch carries the event of its copy";
      g->wait(stream);
      EXPECT_TRUE(g->images.is_cuda() && g->labels.is_cuda());
      EXPECT_TRUE(same_bits(g->images, c->images))
          << "batch " << g->index << " of epoch " << epoch << ": images differ after the copy";
      EXPECT_TRUE(same_bits(g->labels, c->labels)) << "batch " << g->index << ": labels differ";
      ++batches;
    }
    EXPECT_FALSE(cpu.next().has_value());
    EXPECT_EQ(batches, 10);
  }
}

TEST(DataLoaderGpu, EarlyDestructionAndRestore) {
  GTL_REQUIRE_GPU();
  auto digits = std::make_shared<SyntheticDigits>(200);
  const DataLoaderOptions opts{
      .batch_size = 16, .seed = 8, .prefetch = 3, .device = Device::cuda(0)};
  {
    DataLoader loader(digits, opts);
    ASSERT_TRUE(loader.next().has_value());
  }  // copies may still be in flight: the destructor must wait for them, then free the staging
  DataLoader a(digits, opts), b(digits, opts);
  for (int i = 0; i < 5; ++i) a.next();
  b.restore(a.position());
  std::optional<Batch> x = a.next(), y = b.next();
  ASSERT_TRUE(x.has_value() && y.has_value());
  x->wait();
  y->wait();
  EXPECT_TRUE(same_bits(x->images, y->images.to(Device::cpu())))
      << "a restored GPU loader must continue with the same batch";
}

}  // namespace
}  // namespace gtl::data
