// Cross-entropy loss layer over ops/cross_entropy.h (see cross_entropy.h).
#include "gtl/nn/cross_entropy.h"

#include "gtl_reference_guard.h"  // grader/channel: the references refuse to run in a student call

#include "gtl/nn/precision.h"
#include "gtl/ops/cross_entropy.h"

namespace gtl::nn {

Tensor CrossEntropyLoss::forward(const Tensor& logits, const Tensor& labels, Context& ctx) const {
  gtl::grading::reference_guard("gtl::nn::CrossEntropyLoss::forward");
  GTL_CHECK(logits.dim() == 2 && labels.dim() == 1 && labels.size(0) == logits.size(0),
            "CrossEntropyLoss: expected logits [N, C] and labels [N], got "
                << shape_str(logits.shape()) << " and " << shape_str(labels.shape()));
  ctx.clear();
  ctx.input_shape = logits.shape();
  ctx.input_dtype = logits.dtype();
  Tensor logits32 = cast_to(logits, DType::Float32);
  ctx.saved = {logits32, labels};
  return ops::cross_entropy(logits32, labels);
}

Tensor CrossEntropyLoss::backward(Context& ctx, float dloss) const {
  gtl::grading::reference_guard("gtl::nn::CrossEntropyLoss::backward");
  GTL_CHECK(ctx.saved.size() == 2,
            "CrossEntropyLoss::backward: run forward with this context "
            "first (a context is consumed by backward)");
  Tensor d = ops::cross_entropy_backward(ctx.saved[0], ctx.saved[1], dloss);
  const DType dtype = ctx.input_dtype;
  ctx.clear();
  return cast_to(d, dtype);
}

}  // namespace gtl::nn
