// Lab 08, TODO 4: sequence parallelism (tensor_parallel.h, section 4).
//
// Step 1's group computes LayerNorm, the bias after the row-parallel sum and the residual add
// k times over, each rank on the same [B, T, D] tensor, and keeps k copies of their activations.
// These regions act position by position, so they can run on a slice of the sequence instead:
// rank r keeps positions tp_slice(T) only. Between the regions the column/row pair still needs
// every position on every rank, so the all-reduce of step 1 splits into its two halves, an
// all-gather and a reduce-scatter, the same bytes in all. Where each half goes, what each rank
// then holds, and which gradients are no longer whole on one rank, is this TODO.
#include <vector>

#include "gtl/ops/activations.h"
#include "gtl/ops/elementwise.h"
#include "gtl/ops/layernorm.h"
#include "gtl/ops/matmul.h"
#include "gtl/ops/permute.h"
#include "gtl/ops/reduce.h"
#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

Tensor gather_sequence(const Tensor& shard, Communicator& tp) {
  GTL_CHECK(shard.dim() == 3 && shard.dtype() == gtl::DType::Float32,
            "gather_sequence: expected a float32 shard [B, T/k, D], got "
                << gtl::shape_str(shard.shape()));
  // SOLUTION(lab08) step 4a: the all-gather along the sequence.
  const int64_t k = tp.world_size(), b = shard.size(0), part = shard.size(1), d = shard.size(2);
  Tensor chunks = Tensor::empty({k, b, part, d});  // chunk q: rank q's positions of every sequence
  tp.all_gather(shard, chunks);
  return gtl::ops::permute(chunks, {1, 0, 2, 3}).reshape({b, k * part, d});
  // END SOLUTION(lab08)
}

Tensor scatter_sequence(const Tensor& partial, Communicator& tp) {
  GTL_CHECK(partial.dim() == 3 && partial.dtype() == gtl::DType::Float32,
            "scatter_sequence: expected a float32 partial sum [B, T, D], got "
                << gtl::shape_str(partial.shape()));
  // SOLUTION(lab08) step 4a: the reduce-scatter along the sequence.
  const int64_t k = tp.world_size(), b = partial.size(0), d = partial.size(2);
  const int64_t part = tp_slice(partial.size(1), tp.rank(), k, "sequence positions").size();
  Tensor chunks = gtl::ops::permute(partial.reshape({b, k, part, d}), {1, 0, 2, 3});
  Tensor out = Tensor::empty({b, part, d});
  tp.reduce_scatter(chunks, out);
  return out;
  // END SOLUTION(lab08)
}

// SOLUTION(lab08) step 4b: SequenceParallelMLP's forward and backward on this rank's positions.
Tensor SequenceParallelMLP::forward_impl(const Tensor& x, nn::Context& ctx) {
  GTL_CHECK(x.dim() == 3 && x.size(2) == dim_ && x.dtype() == gtl::DType::Float32,
            "SequenceParallelMLP '" << path() << "': expected float32 [B, T/k, " << dim_
                                    << "], got " << gtl::shape_str(x.shape()));
  namespace ops = gtl::ops;
  const int64_t b = x.size(0), part = x.size(1), t = part * tp_.world_size();
  const Tensor x2 = x.reshape({b * part, dim_});
  ops::LayerNormForward ln = ops::layernorm_forward(x2, params_[0].value, params_[1].value);
  Tensor whole = gather_sequence(ln.out.reshape({b, part, dim_}), tp_).reshape({b * t, dim_});
  Tensor h = ops::matmul(whole, params_[2].value, false, true);
  ops::bias_add_(h, params_[3].value);
  Tensor g = ops::gelu(h);
  Tensor sum =
      scatter_sequence(ops::matmul(g, params_[4].value, false, true).reshape({b, t, dim_}), tp_)
          .reshape({b * part, dim_});
  ops::bias_add_(sum, params_[5].value);  // once, on the whole sum of this rank's positions
  ctx.saved = {x2, ln.mean, ln.rstd, whole, h, g};
  return ops::add(x2, sum).reshape({b, part, dim_});
}

Tensor SequenceParallelMLP::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  namespace ops = gtl::ops;
  const Tensor& x2 = ctx.saved.at(0);
  const Tensor& whole = ctx.saved.at(3);
  const Tensor& h = ctx.saved.at(4);
  const Tensor& g = ctx.saved.at(5);
  const int64_t b = ctx.input_shape[0], part = ctx.input_shape[1], t = part * tp_.world_size();
  const float beta = mode == nn::GradMode::Accumulate ? 1.f : 0.f;
  const Tensor dy2 = dy.reshape({b * part, dim_});
  Tensor dsum = gather_sequence(dy, tp_).reshape({b * t, dim_});  // the reduce-scatter's backward
  ops::matmul_out(dsum, g, params_[4].grad, true, false, 1.f, beta);
  Tensor dh = ops::gelu_backward(h, ops::matmul(dsum, params_[4].value));
  ops::matmul_out(dh, whole, params_[2].grad, true, false, 1.f, beta);
  write_grad(params_[3], ops::sum_rows(dh), mode);
  Tensor dln = scatter_sequence(ops::matmul(dh, params_[2].value).reshape({b, t, dim_}), tp_)
                   .reshape({b * part, dim_});  // the all-gather's backward
  ops::LayerNormBackward ln =
      ops::layernorm_backward(dln, x2, params_[0].value, ctx.saved.at(1), ctx.saved.at(2));
  // Replicated parameters: each rank saw its own positions only; the gradient sums them all.
  Tensor dbias = ops::sum_rows(dy2);
  for (const Tensor& grad : {ln.dweight, ln.dbias, dbias}) tp_.all_reduce(grad);
  write_grad(params_[0], ln.dweight, mode);
  write_grad(params_[1], ln.dbias, mode);
  write_grad(params_[5], dbias, mode);
  return ops::add(dy2, ln.dx).reshape({b, part, dim_});
}
// END SOLUTION(lab08)

}  // namespace lab08
