// MaxPool2d: the max of each kernel x kernel window (NCHW, no padding).
//
// Saves no activation at all, only the int64 index of each window's winner (the one element the
// gradient flows to) and the input shape: a quarter of x's elements for 2x2 windows, and none of
// its values. The clearest case of "save what backward needs, not the input".
#pragma once

#include "gtl/nn/module.h"
#include "gtl/ops/pool2d.h"

namespace gtl::nn {

class MaxPool2d final : public Module {
 public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0);  // stride 0: = kernel

  // kernel_h * kernel_w compares per output element; bytes: x read and y written in the compute
  // dtype (the pool follows a convolution), the int64 winner indices written.
  ComputeCost forward_cost(const Shape& input_shape) const override;

 protected:
  Tensor forward_impl(const Tensor& x, Context& ctx) override;
  Tensor backward_impl(Context& ctx, const Tensor& dy, GradMode mode) override;

 private:
  ops::Pool2dParams params_pool_;
};

}  // namespace gtl::nn
