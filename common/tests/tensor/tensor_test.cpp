// Tensors on the CPU: creation, views without copies, conversions, random numbers, printing and
// the errors a student meets first (shape mismatch, mixed devices).
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "gtl/tensor/philox.h"
#include "gtl/tensor/tensor.h"
#include "gtl_test.h"

namespace gtl {
namespace {

TEST(Tensor, CreationFillsEveryElement) {
  const Tensor z = Tensor::zeros({2, 3});
  EXPECT_EQ(z.shape(), (Shape{2, 3}));
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.nbytes(), 24u);
  EXPECT_EQ(z.to_vector(), std::vector<float>(6, 0.f));
  EXPECT_EQ(Tensor::ones({4}, DType::Int64).to_vector(), std::vector<float>(4, 1.f));
  EXPECT_EQ(Tensor::full({3}, 2.5, DType::Float16).to_vector(), std::vector<float>(3, 2.5f));
  EXPECT_EQ(Tensor::arange(5, DType::Int32).to_vector(), (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Tensor::empty({0, 5}).numel(), 0);
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, EveryDtypeHasItsSize) {
  for (auto [dtype, size] : std::vector<std::pair<DType, std::size_t>>{{DType::Float32, 4},
                                                                       {DType::Float16, 2},
                                                                       {DType::BFloat16, 2},
                                                                       {DType::Int32, 4},
                                                                       {DType::Int64, 8},
                                                                       {DType::UInt8, 1}}) {
    const Tensor t = Tensor::zeros({3, 5}, dtype);
    EXPECT_EQ(t.nbytes(), 15 * size) << dtype_name(dtype);
    EXPECT_EQ(parse_dtype(dtype_name(dtype)), dtype);
  }
  EXPECT_THROW(parse_dtype("float64"), Error);
}

TEST(Tensor, StridesAreRowMajor) {
  EXPECT_EQ(Tensor::empty({2, 3, 4}).strides(), (Shape{12, 4, 1}));
  EXPECT_EQ(Tensor::empty({7}).strides(), (Shape{1}));
}

TEST(Tensor, ViewsShareStorageAndCopyNothing) {
  Tensor t = Tensor::arange(12).reshape({3, 4});
  const int64_t allocs_before = current_allocator(Device::cpu())->stats().num_allocs;
  Tensor r = t.reshape({2, -1});
  Tensor rows = t.slice(1, 3);
  Tensor row = t.select(2);
  EXPECT_EQ(current_allocator(Device::cpu())->stats().num_allocs, allocs_before)
      << "reshape, slice and select are views: they must not allocate";
  EXPECT_EQ(r.shape(), (Shape{2, 6}));
  EXPECT_EQ(rows.shape(), (Shape{2, 4}));
  EXPECT_EQ(rows.to_vector(), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(row.to_vector(), (std::vector<float>{8, 9, 10, 11}));
  rows.fill_(-1.0);  // writes through the view into t
  EXPECT_EQ(t.to_vector()[4], -1.f);
  EXPECT_EQ(t.to_vector()[3], 3.f) << "row 0 is outside the slice and must be untouched";
  EXPECT_EQ(rows.storage(), t.storage());
}

TEST(Tensor, BadViewsSayWhatIsWrong) {
  const Tensor t = Tensor::zeros({3, 4});
  try {
    t.reshape({5, 3});
    FAIL() << "reshape to a different number of elements must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[5, 3] holds 15 elements, tensor [3, 4] has 12"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(t.slice(2, 5), Error);
  EXPECT_THROW(t.reshape({-1, -1}), Error);
  EXPECT_THROW(t.reshape({-1, 5}), Error);
}

TEST(Tensor, CloneIsADeepCopy) {
  Tensor a = Tensor::arange(4);
  Tensor b = a.clone();
  b.fill_(7.0);
  EXPECT_EQ(a.to_vector(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_NE(a.storage(), b.storage());
}

TEST(Tensor, CopyChecksShapeAndDtype) {
  Tensor dst = Tensor::zeros({2, 2});
  EXPECT_THROW(dst.copy_(Tensor::zeros({4})), Error);
  try {
    dst.copy_(Tensor::zeros({2, 2}, DType::Float16));
    FAIL() << "copy_ between dtypes must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dtypes differ"), std::string::npos) << e.what();
  }
  dst.copy_(Tensor::full({2, 2}, 3.0));
  EXPECT_EQ(dst.to_vector(), std::vector<float>(4, 3.f));
}

TEST(Tensor, DtypeConversionsRoundTrip) {
  const Tensor x = Tensor::from_vector({-2.5f, 0.f, 1.f, 100.f, 255.f}, {5});
  EXPECT_EQ(x.to(DType::Int32).to_vector(), (std::vector<float>{-2, 0, 1, 100, 255}))
      << "float -> int truncates toward zero, as static_cast does";
  EXPECT_EQ(x.to(DType::Int64).to(DType::Float32).to_vector(),
            (std::vector<float>{-2, 0, 1, 100, 255}));
  EXPECT_EQ(x.to(DType::BFloat16).to(DType::Float32).to_vector(), x.to_vector())
      << "these values are exact in bf16";
  EXPECT_EQ(x.to(DType::UInt8).dtype(), DType::UInt8);
}

TEST(Tensor, TypedAccessChecksTheDtype) {
  Tensor t = Tensor::zeros({2}, DType::Int32);
  EXPECT_NO_THROW(t.data<int32_t>());
  try {
    t.data<float>();
    FAIL() << "data<float>() on an int32 tensor must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data<float32>() on a int32 tensor"), std::string::npos)
        << e.what();
  }
}

TEST(Tensor, UniformIsDeterministicAndInRange) {
  Generator g1(42), g2(42);
  const std::vector<float> a = Tensor::uniform({1000}, g1, -1.f, 1.f).to_vector();
  const std::vector<float> b = Tensor::uniform({1000}, g2, -1.f, 1.f).to_vector();
  EXPECT_EQ(a, b) << "same seed, same numbers";
  const std::vector<float> c = Tensor::uniform({1000}, g1, -1.f, 1.f).to_vector();
  EXPECT_NE(a, c) << "the generator advances: a second draw differs";
  double sum = 0;
  for (float v : a) {
    ASSERT_TRUE(v >= -1.f && v < 1.f) << v;
    sum += v;
  }
  EXPECT_NEAR(sum / a.size(), 0.0, 0.1);
  // Element i depends only on (seed, offset + i): the counter-based property the GPU relies on.
  EXPECT_EQ(a[17], -1.f + 2.f * philox::uniform(42, 17));
}

TEST(Tensor, NormalHasTheRequestedMoments) {
  Generator g(3);
  const std::vector<float> v = Tensor::normal({20000}, g, 2.f, 0.5f).to_vector();
  double mean = 0, var = 0;
  for (float x : v) mean += x;
  mean /= v.size();
  for (float x : v) var += (x - mean) * (x - mean);
  var /= v.size();
  EXPECT_NEAR(mean, 2.0, 0.02);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.02);
  for (float x : v) ASSERT_TRUE(std::isfinite(x));
}

TEST(Tensor, NormalThenUniformFromOneGeneratorAreIndependent) {
  // normal({4}) takes offsets 0..3, uniform({4}) offsets 4..7. When normals shared the uniforms'
  // Philox blocks, n[2] was the Box-Muller transform of u[0] and u[1].
  Generator g(7);
  const std::vector<float> n = Tensor::normal({4}, g).to_vector();
  const std::vector<float> u = Tensor::uniform({4}, g).to_vector();
  const float from_u = std::sqrt(-2.f * std::log(1.f - u[0])) * std::cos(6.2831853f * u[1]);
  EXPECT_GT(std::fabs(n[2] - from_u), 1e-3f)
      << "normal element 2 (" << n[2] << ") is computed from the next uniform draw's numbers";
}

TEST(Tensor, PrintingShowsDtypeDeviceShapeAndValues) {
  EXPECT_EQ(Tensor::arange(3).str(), "Tensor(float32, cpu, [3]) [0, 1, 2]");
  EXPECT_EQ(Tensor::arange(10).reshape({2, 5}).str(4),
            "Tensor(float32, cpu, [2, 5]) [0, 1, 2, 3, ...]");
  EXPECT_EQ(Tensor().str(), "Tensor(undefined)");
}

TEST(Tensor, ItemNeedsOneElement) {
  EXPECT_EQ(Tensor::full({1}, 4.0).item(), 4.f);
  EXPECT_THROW(Tensor::zeros({2}).item(), Error);
}

TEST(Tensor, MixedDevicesAreNamedInTheError) {
  // Two tensors that claim different devices: build the CUDA one only when a GPU exists, else
  // check the message format with a device-agnostic helper on two CPU tensors plus a fake one.
  const Tensor a = Tensor::zeros({2});
  EXPECT_NO_THROW(check_same_device("add", {&a, &a}));
  if (cuda_available()) {
    const Tensor b = Tensor::zeros({2}, DType::Float32, Device::cuda(0));
    try {
      check_same_device("add", {&a, &b});
      FAIL() << "mixing cpu and cuda:0 must throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("add: tensors on different devices: cpu and cuda:0"),
                std::string::npos)
          << e.what();
    }
  } else {
    EXPECT_THROW(Tensor::zeros({2}, DType::Float32, Device::cuda(0)), Error)
        << "creating a CUDA tensor without a GPU must fail with an error, not crash";
  }
}

TEST(Tensor, CopyAsyncOnCpuIsImmediate) {
  Tensor src = Tensor::arange(6);
  Tensor dst = Tensor::empty_with({6}, DType::Float32, pinned_allocator());
  dst.copy_async_(src, current_stream());
  current_stream().synchronize();
  EXPECT_EQ(dst.to_vector(), src.to_vector());
}

}  // namespace
}  // namespace gtl
