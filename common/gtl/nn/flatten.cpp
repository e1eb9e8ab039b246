// Flatten: a reshape forward and backward (see flatten.h).
#include "gtl/nn/flatten.h"

namespace gtl::nn {

Tensor Flatten::forward_impl(const Tensor& x, Context&) {
  GTL_CHECK(x.dim() >= 1, "Flatten '" << path() << "': expected at least [N], got a scalar");
  return x.reshape({x.size(0), -1});
}

Tensor Flatten::backward_impl(Context& ctx, const Tensor& dy, GradMode) {
  return dy.reshape(ctx.input_shape);
}

}  // namespace gtl::nn
