// ops::conv2d_* on the CPU (im2col + OpenBLAS) against the direct-loop formula, and the backward
// passes against finite differences of the forward pass.
//
// Tolerances:
//   forward and backward vs the double-precision loops, float32: atol 1e-4, rtol 1e-4
//     (sums of at most C*R*S = 27 products of values in [-1, 1]);
//   finite differences, float32: atol 2e-3, rtol 1e-2. The loss L = <conv(x), g> is linear in
//     x and in w, so a central difference with step 0.05 has no truncation error; what is left
//     is float32 rounding of L (about 1e-6 relative) divided by the step;
//   float16/bfloat16 forward vs the loops on the rounded inputs: the output is rounded once,
//     rtol 2^-10 (fp16) / 2^-7 (bf16), atol 1e-3 / 1e-2.
#include <string>
#include <vector>

#include "gemm_conv_reference.h"
#include "gtl/ops/conv2d.h"
#include "gtl_test.h"

namespace {

using gtl::DType;
using gtl::Generator;
using gtl::Shape;
using gtl::Tensor;
using gtl::ops::Conv2dParams;
using gtl::testing::ConvCase;
using gtl::testing::expect_close;
using gtl::testing::finite_difference;
using gtl::testing::Tolerance;
namespace ops = gtl::ops;

// Odd sizes, stride 2, padding 1, 1x1 kernels, rectangular kernels and unequal strides.
const std::vector<ConvCase> kCases = {
    {{2, 3, 7, 9}, {4, 3, 3, 3}, Conv2dParams::make(1, 1)},
    {{1, 2, 8, 7}, {3, 2, 3, 3}, Conv2dParams::make(2, 1)},
    {{2, 3, 5, 5}, {2, 3, 1, 1}, Conv2dParams::make(1, 0)},
    {{1, 1, 6, 6}, {1, 1, 3, 3}, Conv2dParams::make(2, 0)},
    {{3, 2, 9, 5}, {4, 2, 2, 3}, Conv2dParams{2, 1, 1, 0}},
    {{1, 4, 3, 3}, {5, 4, 3, 3}, Conv2dParams::make(1, 0)},  // output 1x1
};

const Tolerance kFp32{1e-4, 1e-4};
const Tolerance kFiniteDiff{2e-3, 1e-2};
const float kFiniteDiffStep = 0.05f;

TEST(Conv2d, ForwardMatchesDirectLoops) {
  Generator gen(10);
  for (const ConvCase& c : kCases) {
    Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f);
    Tensor w = Tensor::uniform(c.w, gen, -1.f, 1.f);
    Tensor b = Tensor::uniform({c.w[0]}, gen, -1.f, 1.f);
    expect_close(ops::conv2d_forward(x, w, b, c.p), gtl::testing::reference_conv2d(x, w, b, c.p),
                 kFp32, "conv2d forward with bias, " + c.str() + " (im2col + GEMM vs the formula)");
    expect_close(ops::conv2d_forward(x, w, Tensor(), c.p),
                 gtl::testing::reference_conv2d(x, w, Tensor(), c.p), kFp32,
                 "conv2d forward without bias, " + c.str());
  }
}

TEST(Conv2d, OutputShapeFollowsTheFormula) {
  // P = (H + 2 pad - R) / stride + 1 = (7 + 2 - 3) / 2 + 1 = 4; Q = (10 + 2 - 3) / 2 + 1 = 5.
  EXPECT_EQ(ops::conv2d_output_shape({2, 3, 7, 10}, {8, 3, 3, 3}, Conv2dParams::make(2, 1)),
            (Shape{2, 8, 4, 5}));
}

TEST(Conv2d, BackwardMatchesFiniteDifferences) {
  Generator gen(11);
  // Small cases: finite differences run two forward passes per input element.
  const std::vector<ConvCase> cases = {
      {{1, 2, 5, 6}, {3, 2, 3, 3}, Conv2dParams::make(1, 1)},
      {{2, 2, 7, 5}, {2, 2, 3, 3}, Conv2dParams::make(2, 1)},
      {{1, 3, 4, 4}, {2, 3, 1, 1}, Conv2dParams::make(2, 0)},
  };
  for (const ConvCase& c : cases) {
    Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f);
    Tensor w = Tensor::uniform(c.w, gen, -1.f, 1.f);
    Tensor b = Tensor::uniform({c.w[0]}, gen, -1.f, 1.f);
    const Shape ys = ops::conv2d_output_shape(c.x, c.w, c.p);
    Tensor g = Tensor::uniform(ys, gen, -1.f, 1.f);  // dL/dy

    expect_close(
        ops::conv2d_backward_data(g, w, c.x, c.p),
        finite_difference(x, g, kFiniteDiffStep,
                          [&](const Tensor& v) { return ops::conv2d_forward(v, w, b, c.p); }),
        kFiniteDiff, "dL/dx vs finite differences, " + c.str());
    expect_close(
        ops::conv2d_backward_weight(g, x, c.w, c.p),
        finite_difference(w, g, kFiniteDiffStep,
                          [&](const Tensor& v) { return ops::conv2d_forward(x, v, b, c.p); }),
        kFiniteDiff, "dL/dw vs finite differences, " + c.str());
    expect_close(
        ops::conv2d_backward_bias(g),
        finite_difference(b, g, kFiniteDiffStep,
                          [&](const Tensor& v) { return ops::conv2d_forward(x, w, v, c.p); }),
        kFiniteDiff, "dL/db vs finite differences, " + c.str());
  }
}

// The backward passes as adjoints, exactly: <conv(x, w), g> = <x, dL/dx> = <w, dL/dw>, because
// the convolution is linear in x and in w. With small integers every sum is exact in float32.
TEST(Conv2d, BackwardIsTheExactAdjointOnSmallIntegers) {
  Generator gen(12);
  for (const ConvCase& c : kCases) {
    Tensor x = gtl::testing::small_integers(c.x, gen, 2);
    Tensor w = gtl::testing::small_integers(c.w, gen, 2);
    Tensor g = gtl::testing::small_integers(ops::conv2d_output_shape(c.x, c.w, c.p), gen, 2);
    const double loss = gtl::testing::dot(ops::conv2d_forward(x, w, Tensor(), c.p), g);
    EXPECT_EQ(gtl::testing::dot(x, ops::conv2d_backward_data(g, w, c.x, c.p)), loss)
        << "<x, dL/dx> must equal <conv(x, w), g>, " << c.str()
        << " (col2im must add every column back where im2col read it)";
    EXPECT_EQ(gtl::testing::dot(w, ops::conv2d_backward_weight(g, x, c.w, c.p)), loss)
        << "<w, dL/dw> must equal <conv(x, w), g>, " << c.str();
  }
}

TEST(Conv2d, HalfTypesRoundOnce) {
  Generator gen(13);
  struct Case {
    DType dtype;
    Tolerance tol;
  };
  for (const Case& t :
       {Case{DType::Float16, {1e-3, 0x1p-10}}, Case{DType::BFloat16, {1e-2, 0x1p-7}}})
    for (const ConvCase& c : kCases) {
      Tensor x = Tensor::uniform(c.x, gen, -1.f, 1.f, t.dtype);
      Tensor w = Tensor::uniform(c.w, gen, -1.f, 1.f, t.dtype);
      Tensor y = ops::conv2d_forward(x, w, Tensor(), c.p);
      ASSERT_EQ(y.dtype(), t.dtype);
      expect_close(y, gtl::testing::reference_conv2d(x, w, Tensor(), c.p), t.tol,
                   std::string(gtl::dtype_name(t.dtype)) + " conv2d forward, " + c.str());
    }
}

template <typename F>
void expect_error_naming(F f, const std::vector<std::string>& parts, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << what << ": expected a gtl::Error, nothing was thrown";
  } catch (const gtl::Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << what << ": the message should name " << p << ", got: " << e.what();
  }
}

TEST(Conv2d, ShapeErrorsNameTheShapes) {
  const Conv2dParams p = Conv2dParams::make(1, 0);
  expect_error_naming(
      [&] {
        ops::conv2d_forward(Tensor::zeros({1, 3, 5, 5}), Tensor::zeros({2, 4, 3, 3}), Tensor(), p);
      },
      {"[1, 3, 5, 5]", "[2, 4, 3, 3]"}, "channel mismatch (3 vs 4)");
  expect_error_naming(
      [&] {
        ops::conv2d_forward(Tensor::zeros({1, 1, 2, 2}), Tensor::zeros({1, 1, 3, 3}), Tensor(), p);
      },
      {"[1, 1, 2, 2]", "[1, 1, 3, 3]"}, "kernel larger than the input");
  expect_error_naming(
      [&] {
        ops::conv2d_forward(Tensor::zeros({1, 1, 5, 5}), Tensor::zeros({2, 1, 3, 3}),
                            Tensor::zeros({3}), p);
      },
      {"[2]", "[3]"}, "bias of the wrong size");
  expect_error_naming(
      [&] {
        ops::conv2d_forward(Tensor::zeros({3, 5, 5}), Tensor::zeros({2, 3, 3, 3}), Tensor(), p);
      },
      {"[3, 5, 5]"}, "3-D input");
  expect_error_naming(
      [&] {
        ops::conv2d_backward_data(Tensor::zeros({1, 2, 4, 4}), Tensor::zeros({2, 1, 3, 3}),
                                  {1, 1, 5, 5}, p);
      },
      {"[1, 2, 3, 3]", "[1, 2, 4, 4]"}, "dy of the wrong shape");
  expect_error_naming(
      [&] {
        ops::conv2d_forward(Tensor::zeros({1, 1, 5, 5}), Tensor::zeros({1, 1, 3, 3}), Tensor(),
                            Conv2dParams::make(0, 0));
      },
      {"stride"}, "zero stride");
}

}  // namespace
