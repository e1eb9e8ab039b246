// Tensors on a real GPU agree with the CPU: the same random numbers for the same seed, the same
// fp16/bf16 rounding, and copies in every direction. Skipped, with the reason, without a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

namespace gtl {
namespace {

const Device kGpu = Device::cuda(0);

TEST(GpuTensor, UniformMatchesTheCpuBitForBit) {
  GTL_REQUIRE_GPU();
  for (int64_t n :
       {int64_t{1}, int64_t{3}, int64_t{1000}, testing::gpu_or_emulated(100003, 4099)}) {
    Generator gc(1234), gg(1234);
    const Tensor c = Tensor::uniform({n}, gc, -2.f, 3.f);
    const Tensor g = Tensor::uniform({n}, gg, -2.f, 3.f, DType::Float32, kGpu);
    EXPECT_EQ(g.to_vector(), c.to_vector()) << "n = " << n;
    EXPECT_EQ(gg.offset(), gc.offset());
  }
}

TEST(GpuTensor, NormalMatchesTheCpuToAFewUlp) {
  GTL_REQUIRE_GPU();
  Generator gc(9), gg(9);
  const int64_t n = testing::gpu_or_emulated(100001, 4097);
  const Tensor c = Tensor::normal({n}, gc, 0.f, 1.f);
  const Tensor g = Tensor::normal({n}, gg, 0.f, 1.f, DType::Float32, kGpu);
  // logf/sinf/cosf may differ in the last bits between libm and CUDA: allow ~8 ulp.
  testing::expect_close(g, c, {1e-6, 1e-6}, "normal() on cuda:0 vs cpu");
}

TEST(GpuTensor, HalfCastsRoundExactlyLikeTheCpu) {
  GTL_REQUIRE_GPU();
  Generator gen(5);
  const Tensor x = Tensor::normal({50000}, gen, 0.f, 3000.f);  // reaches fp16 overflow
  for (DType half_type : {DType::Float16, DType::BFloat16}) {
    const std::vector<float> cpu = x.to(half_type).to(DType::Float32).to_vector();
    const std::vector<float> gpu = x.to(kGpu).to(half_type).to(DType::Float32).to_vector();
    ASSERT_EQ(gpu.size(), cpu.size());
    for (std::size_t i = 0; i < cpu.size(); ++i) {
      ASSERT_TRUE(gpu[i] == cpu[i] || (std::isnan(gpu[i]) && std::isnan(cpu[i])))
          << dtype_name(half_type) << " element " << i << ": gpu " << gpu[i] << ", cpu " << cpu[i];
    }
  }
}

TEST(GpuTensor, CopiesInEveryDirection) {
  GTL_REQUIRE_GPU();
  const Tensor host = Tensor::arange(1001, DType::Int64);
  const Tensor dev = host.to(kGpu);
  EXPECT_TRUE(dev.is_cuda());
  EXPECT_EQ(dev.to(kGpu).to(Device::cpu()).to_vector(), host.to_vector());  // d2d then d2h
  Tensor rows = dev.reshape({7, 143}).slice(2, 5);
  EXPECT_EQ(rows.to_vector()[0], 286.f) << "a slice of a GPU tensor starts at its row";
}

TEST(GpuTensor, AsyncCopyFromPinnedMemoryOnAStream) {
  GTL_REQUIRE_GPU();
  Stream s = Stream::create(kGpu);
  Tensor pinned = Tensor::empty_with({1 << 16}, DType::Float32, pinned_allocator());
  pinned.fill_(1.5);
  Tensor dev = Tensor::empty({1 << 16}, DType::Float32, kGpu);
  dev.copy_async_(pinned, s);
  s.synchronize();
  EXPECT_EQ(dev.to_vector(), std::vector<float>(1 << 16, 1.5f));
}

TEST(GpuTensor, CreationAndPrinting) {
  GTL_REQUIRE_GPU();
  EXPECT_EQ(Tensor::arange(3, DType::Float32, kGpu).str(),
            "Tensor(float32, cuda:0, [3]) [0, 1, 2]");
  EXPECT_EQ(Tensor::full({5}, 2.0, DType::BFloat16, kGpu).to_vector(), std::vector<float>(5, 2.f));
  EXPECT_EQ(Tensor::zeros({0}, DType::Float32, kGpu).numel(), 0);
}

}  // namespace
}  // namespace gtl
