// ops::max_pool2d_* and avg_pool2d_* on the CPU against the direct-loop formula, and the
// backward passes against finite differences.
//
// Tolerances: max pooling selects an element, so its forward is exact (asserted equal); average
// pooling sums at most 9 values, atol/rtol 1e-6. Finite differences: max pooling is evaluated on
// distinct integers with a step of 0.25, which never changes a window's winner, and average
// pooling is linear, so both are exact up to float32 rounding of the loss: atol 1e-3, rtol 1e-3.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "gemm_conv_reference.h"
#include "gtl/ops/pool2d.h"
#include "gtl_test.h"

namespace {

using gtl::DType;
using gtl::Generator;
using gtl::Shape;
using gtl::Tensor;
using gtl::ops::Pool2dParams;
using gtl::testing::expect_close;
using gtl::testing::finite_difference;
using gtl::testing::Tolerance;
namespace ops = gtl::ops;

struct PoolCase {
  Shape x;
  Pool2dParams p;
  std::string str() const {
    return "x " + gtl::shape_str(x) + " kernel " + std::to_string(p.kernel_h) + "x" +
           std::to_string(p.kernel_w) + " stride " + std::to_string(p.stride_h) + "x" +
           std::to_string(p.stride_w);
  }
};

// Odd sizes (a leftover row/column the windows skip), overlapping windows (kernel 3, stride 2),
// 1x1 windows, rectangular windows and unequal strides.
const std::vector<PoolCase> kCases = {
    {{2, 3, 7, 9}, Pool2dParams::make(2, 2)}, {{1, 2, 9, 7}, Pool2dParams::make(3, 2)},
    {{2, 1, 5, 5}, Pool2dParams::make(1, 1)}, {{1, 2, 6, 8}, Pool2dParams{2, 3, 1, 2}},
    {{3, 2, 4, 4}, Pool2dParams::make(4, 1)},  // one window: global pooling
};

// Distinct values: a random permutation of 0..n-1, scaled by 1 (gaps of at least 1).
Tensor distinct_values(const Shape& shape, Generator& gen) {
  const int64_t n = gtl::shape_numel(shape);
  std::vector<float> keys = Tensor::uniform({n}, gen).to_vector();
  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(order[i])] = static_cast<float>(i);
  return Tensor::from_vector(v, shape);
}

TEST(Pool2d, MaxForwardMatchesLoopsAndIndicesPointAtTheWinners) {
  Generator gen(20);
  for (const PoolCase& c : kCases) {
    Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f);
    ops::MaxPool2dResult r = ops::max_pool2d_forward(x, c.p);
    EXPECT_EQ(r.output.to_vector(), gtl::testing::reference_pool2d(x, c.p, true).to_vector())
        << "max pool forward, " << c.str();
    ASSERT_EQ(r.indices.dtype(), DType::Int64);
    ASSERT_EQ(r.indices.shape(), r.output.shape());
    // indices[o] = ih * W + iw inside the plane: x at that index is the window's max.
    const std::vector<float> xv = x.to_vector(), yv = r.output.to_vector();
    const int64_t* idx = r.indices.data<int64_t>();
    const int64_t plane_in = c.x[2] * c.x[3], plane_out = r.output.size(2) * r.output.size(3);
    for (int64_t o = 0; o < r.output.numel(); ++o) {
      const int64_t plane = o / plane_out;
      EXPECT_EQ(xv[static_cast<std::size_t>(plane * plane_in + idx[o])],
                yv[static_cast<std::size_t>(o)])
          << "output " << o << ": indices must give the position of the max in its input plane, "
          << c.str();
    }
  }
}

TEST(Pool2d, AvgForwardMatchesLoops) {
  Generator gen(21);
  for (const PoolCase& c : kCases) {
    Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f);
    expect_close(ops::avg_pool2d_forward(x, c.p), gtl::testing::reference_pool2d(x, c.p, false),
                 Tolerance{1e-6, 1e-6}, "avg pool forward, " + c.str());
  }
}

TEST(Pool2d, BackwardMatchesFiniteDifferences) {
  Generator gen(22);
  for (const PoolCase& c : kCases) {
    Tensor x = distinct_values(c.x, gen);
    ops::MaxPool2dResult r = ops::max_pool2d_forward(x, c.p);
    Tensor g = Tensor::uniform(r.output.shape(), gen, -1.f, 1.f);
    expect_close(
        ops::max_pool2d_backward(g, r.indices, c.x, c.p),
        finite_difference(x, g, 0.25f,
                          [&](const Tensor& v) { return ops::max_pool2d_forward(v, c.p).output; }),
        Tolerance{1e-3, 1e-3},
        "max pool dL/dx vs finite differences (gradient goes to each window's max), " + c.str());
    expect_close(
        ops::avg_pool2d_backward(g, c.x, c.p),
        finite_difference(x, g, 0.25f,
                          [&](const Tensor& v) { return ops::avg_pool2d_forward(v, c.p); }),
        Tolerance{1e-3, 1e-3},
        "avg pool dL/dx vs finite differences (dy / window size to every element), " + c.str());
  }
}

TEST(Pool2d, MaxTiesGoToTheFirstElementAndNanPropagates) {
  // All equal: every window's gradient goes to its first element (row-major).
  Tensor x = Tensor::ones({1, 1, 4, 4});
  ops::MaxPool2dResult r = ops::max_pool2d_forward(x, Pool2dParams::make(2, 2));
  EXPECT_EQ(r.indices.to_vector(), (std::vector<float>{0, 2, 8, 10}))
      << "ties: the first element of each window wins";
  Tensor dx = ops::max_pool2d_backward(Tensor::ones({1, 1, 2, 2}), r.indices, {1, 1, 4, 4},
                                       Pool2dParams::make(2, 2));
  EXPECT_EQ(dx.to_vector(), (std::vector<float>{1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0}));

  std::vector<float> v(16, 0.f);
  v[5] = NAN;  // in the first window
  Tensor y = ops::max_pool2d_forward(Tensor::from_vector(v, {1, 1, 4, 4}), Pool2dParams::make(2, 2))
                 .output;
  EXPECT_TRUE(std::isnan(y.to_vector()[0])) << "a NaN in a window must propagate, not vanish";
  EXPECT_EQ(y.to_vector()[1], 0.f);
}

TEST(Pool2d, HalfTypes) {
  Generator gen(23);
  for (DType dtype : {DType::Float16, DType::BFloat16})
    for (const PoolCase& c : kCases) {
      Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f, dtype);
      ops::MaxPool2dResult r = ops::max_pool2d_forward(x, c.p);
      ASSERT_EQ(r.output.dtype(), dtype);
      EXPECT_EQ(r.output.to_vector(), gtl::testing::reference_pool2d(x, c.p, true).to_vector())
          << gtl::dtype_name(dtype) << " max pool selects an element: exact, " << c.str();
      // The mean of values already rounded to 16 bits, rounded once more: one half-ulp.
      expect_close(ops::avg_pool2d_forward(x, c.p), gtl::testing::reference_pool2d(x, c.p, false),
                   dtype == DType::Float16 ? Tolerance{1e-3, 0x1p-11} : Tolerance{1e-2, 0x1p-8},
                   std::string(gtl::dtype_name(dtype)) + " avg pool, " + c.str());
    }
}

TEST(Pool2d, ShapeErrors) {
  EXPECT_THROW(ops::max_pool2d_forward(Tensor::zeros({1, 1, 2, 2}), Pool2dParams::make(3, 1)),
               gtl::Error)
      << "a window larger than the input plane";
  EXPECT_THROW(ops::avg_pool2d_forward(Tensor::zeros({4, 4}), Pool2dParams::make(2, 2)), gtl::Error)
      << "a 2-D input";
  EXPECT_THROW(ops::avg_pool2d_forward(Tensor::zeros({1, 1, 4, 4}), Pool2dParams::make(2, 0)),
               gtl::Error)
      << "stride 0";
  EXPECT_THROW(ops::max_pool2d_backward(Tensor::zeros({1, 1, 2, 2}),
                                        Tensor::zeros({1, 1, 2, 2}, DType::Int32), {1, 1, 4, 4},
                                        Pool2dParams::make(2, 2)),
               gtl::Error)
      << "indices must be the int64 tensor of the forward pass";
  EXPECT_THROW(
      ops::avg_pool2d_backward(Tensor::zeros({1, 1, 3, 3}), {1, 1, 4, 4}, Pool2dParams::make(2, 2)),
      gtl::Error)
      << "dy of the wrong shape";
}

}  // namespace
