// ops::*_pool2d_* on the GPU against the CPU loops (pool2d_test.cpp checks those). Skips without
// a GPU. Max pooling selects elements and its backward adds dy values in the same order as the
// CPU loop, so float32 results are asserted equal; average pooling may fuse the multiply-add on
// the GPU: atol/rtol 1e-6. 16-bit types: the same, plus one rounding: one ulp.
#include <string>
#include <vector>

#include "gtl/ops/pool2d.h"
#include "gtl_test.h"

namespace {

using gtl::Device;
using gtl::DType;
using gtl::Generator;
using gtl::Shape;
using gtl::Tensor;
using gtl::ops::Pool2dParams;
using gtl::testing::expect_close;
using gtl::testing::Tolerance;
namespace ops = gtl::ops;

const Device kGpu = Device::cuda(0);

struct PoolCase {
  Shape x;
  Pool2dParams p;
};
const std::vector<PoolCase> kCases = {
    {{2, 3, 7, 9}, Pool2dParams::make(2, 2)}, {{1, 2, 9, 7}, Pool2dParams::make(3, 2)},
    {{2, 1, 5, 5}, Pool2dParams::make(1, 1)}, {{1, 2, 6, 8}, Pool2dParams{2, 3, 1, 2}},
    {{3, 2, 4, 4}, Pool2dParams::make(4, 1)}, {{8, 16, 33, 31}, Pool2dParams::make(3, 2)},
};

std::string str(const PoolCase& c, DType dtype) {
  return std::string(gtl::dtype_name(dtype)) + " x " + gtl::shape_str(c.x) + " kernel " +
         std::to_string(c.p.kernel_h) + "x" + std::to_string(c.p.kernel_w) + " stride " +
         std::to_string(c.p.stride_h) + "x" + std::to_string(c.p.stride_w);
}

TEST(Pool2dCuda, MatchesCpu) {
  GTL_REQUIRE_GPU();
  Generator gen(50);
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16})
    for (const PoolCase& c : kCases) {
      const std::string what = str(c, dtype);
      Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f, dtype);
      ops::MaxPool2dResult cpu = ops::max_pool2d_forward(x, c.p);
      ops::MaxPool2dResult gpu = ops::max_pool2d_forward(x.to(kGpu), c.p);
      EXPECT_EQ(gpu.output.to_vector(), cpu.output.to_vector()) << what << ": max forward";
      EXPECT_EQ(gpu.indices.to_vector(), cpu.indices.to_vector()) << what << ": argmax indices";

      Tensor g = Tensor::uniform(cpu.output.shape(), gen, -1.f, 1.f, dtype);
      EXPECT_EQ(ops::max_pool2d_backward(g.to(kGpu), gpu.indices, c.x, c.p).to_vector(),
                ops::max_pool2d_backward(g, cpu.indices, c.x, c.p).to_vector())
          << what << ": max backward (gather on the GPU, scatter on the CPU, same sums)";

      const Tolerance tol = dtype == DType::Float32   ? Tolerance{1e-6, 1e-6}
                            : dtype == DType::Float16 ? Tolerance{1e-3, 0x1p-10}
                                                      : Tolerance{1e-2, 0x1p-7};
      expect_close(ops::avg_pool2d_forward(x.to(kGpu), c.p), ops::avg_pool2d_forward(x, c.p), tol,
                   what + ": avg forward");
      expect_close(ops::avg_pool2d_backward(g.to(kGpu), c.x, c.p),
                   ops::avg_pool2d_backward(g, c.x, c.p), tol, what + ": avg backward");
    }
}

}  // namespace
