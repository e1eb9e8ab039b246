// The tied head (see tied_head.h).
#include "gtl/nn/tied_head.h"

#include "gtl/nn/precision.h"
#include "gtl/ops/matmul.h"

namespace gtl::nn::tied_head {

Tensor forward(const Tensor& h, const ParamRef& table, Context& ctx) {
  Tensor hc = cast_to_compute(h);
  ctx.saved = {hc};
  return ops::matmul(hc, weight_as(table, hc.dtype()), false, true);
}

Tensor backward(Context& ctx, const Tensor& dlogits, const ParamRef& table, GradMode mode,
                WriteGrad write) {
  const Tensor& hc = ctx.saved.at(0);
  Tensor dl = cast_to(dlogits, hc.dtype());
  Tensor dh = ops::matmul(dl, weight_as(table, hc.dtype()));
  if (dl.dtype() == table.grad.dtype()) {
    ops::matmul_out(dl, hc, table.grad, true, false, 1.f, mode == GradMode::Accumulate ? 1.f : 0.f);
  } else {
    write(table, ops::matmul(dl, hc, true, false), mode);
  }
  ctx.saved.clear();
  return dh;
}

ComputeCost forward_cost(int64_t rows, int64_t dim, int64_t vocab) {
  const double n = static_cast<double>(rows), d = static_cast<double>(dim);
  const double v = static_cast<double>(vocab);
  const double c = static_cast<double>(dtype_size(current_precision().compute));
  return {2 * n * d * v, (n * d + v * d + n * v) * c};
}

ComputeCost backward_cost(int64_t rows, int64_t dim, int64_t vocab) {
  const double n = static_cast<double>(rows), d = static_cast<double>(dim);
  const double v = static_cast<double>(vocab);
  const double c = static_cast<double>(dtype_size(current_precision().compute));
  return {4 * n * d * v, 2 * (n * v + v * d + n * d) * c};
}

}  // namespace gtl::nn::tied_head
