// Devices, errors and streams as seen from the CPU: parsing, device-agnostic fallbacks, and the
// error messages a student reads when something is misused.
#include <gtest/gtest.h>

#include "gtl/runtime/device.h"
#include "gtl/runtime/error.h"
#include "gtl/runtime/stream.h"

namespace gtl {
namespace {

TEST(Device, ParsesAndPrints) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda"), Device::cuda(0));
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::cuda(2).str(), "cuda:2");
  EXPECT_EQ(Device::cpu().str(), "cpu");
  EXPECT_TRUE(Device::cuda(1).is_cuda());
  EXPECT_FALSE(Device::cpu().is_cuda());
}

TEST(Device, RejectsMalformedNamesWithTheName) {
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", ""}) {
    try {
      Device::parse(bad);
      ADD_FAILURE() << "Device::parse(\"" << bad << "\") should throw";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("unknown device '" + std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(Device, DefaultDeviceFallsBackToCpuWithoutGpu) {
  // Device-agnostic code: default_device() is cuda:0 exactly when a GPU is usable.
  EXPECT_EQ(default_device().is_cuda(), cuda_available());
  EXPECT_EQ(cuda_available(), cuda_device_count() > 0);
  if (!cuda_available()) {
    EXPECT_FALSE(cuda_unavailable_reason().empty()) << "the reason must be given in words";
    EXPECT_THROW(device_properties(0), Error);
  }
}

TEST(Error, CheckNamesConditionPlaceAndMessage) {
  try {
    const int n = 3;
    GTL_CHECK(n == 4, "expected 4 rows, got " << n);
    FAIL() << "GTL_CHECK should have thrown";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("expected 4 rows, got 3"), std::string::npos) << what;
    EXPECT_NE(what.find("n == 4"), std::string::npos) << what;
    EXPECT_NE(what.find("runtime_test.cpp:"), std::string::npos) << what;
  }
}

TEST(Error, CudaErrorNamesLibraryCallPlaceAndReason) {
  CudaError e("CUDA", "cudaMalloc(&p, n)", "/src/alloc.cu", 42, "out of memory");
  EXPECT_STREQ(e.what(), "CUDA error: cudaMalloc(&p, n) failed at alloc.cu:42: out of memory");
  EXPECT_EQ(e.call(), "cudaMalloc(&p, n)");
}

TEST(Stream, DefaultStreamIsUsableWithoutGpu) {
  Stream s;  // the default stream: a no-op handle on a machine without a GPU
  EXPECT_TRUE(s.is_default());
  if (!cuda_available()) {
    EXPECT_NO_THROW(s.synchronize());
    EXPECT_NO_THROW(device_synchronize());
    EXPECT_THROW(Stream::create(Device::cuda(0)), Error);
  }
}

TEST(Stream, ScopeSetsAndRestoresTheCurrentStream) {
  EXPECT_TRUE(current_stream().is_default());
  {
    Stream s;
    StreamScope scope(s);
    EXPECT_EQ(current_stream().handle(), s.handle());
  }
  EXPECT_TRUE(current_stream().is_default());
}

}  // namespace
}  // namespace gtl
