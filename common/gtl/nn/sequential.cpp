// Sequential forward (first to last) and backward (last to first); see sequential.h.
#include "gtl/nn/sequential.h"

namespace gtl::nn {

Tensor Sequential::forward_impl(const Tensor& x, Context& ctx) {
  ctx.children.resize(children_.size());
  Tensor h = x;
  for (std::size_t i = 0; i < children_.size(); ++i) h = children_[i]->forward(h, ctx.children[i]);
  return h;
}

Tensor Sequential::backward_impl(Context& ctx, const Tensor& dy, GradMode mode) {
  Tensor d = dy;
  for (std::size_t i = children_.size(); i-- > 0;) {
    d = children_[i]->backward(ctx.children[i], d, mode);  // frees layer i's activations
  }
  return d;
}

}  // namespace gtl::nn
