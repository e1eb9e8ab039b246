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
  // TODO(lab08) step 4a: the all-gather along the sequence.
  //   Spec: every rank returns the whole [B, T, D], T = k * T/k, each position exactly the bits
  //   its owner holds, with one collective of the group (B*T*D floats). Hint: the core's
  //   all_gather lays the ranks' inputs end to end, rank 0's first. Where must sequence 1's
  //   positions of rank 0 go? About 4 lines.
  (void)shard, (void)tp;
  throw gtl::Error("TODO(lab08) step 4a: gather_sequence is not implemented");
  // END TODO(lab08)
}

Tensor scatter_sequence(const Tensor& partial, Communicator& tp) {
  GTL_CHECK(partial.dim() == 3 && partial.dtype() == gtl::DType::Float32,
            "scatter_sequence: expected a float32 partial sum [B, T, D], got "
                << gtl::shape_str(partial.shape()));
  // TODO(lab08) step 4a: the reduce-scatter along the sequence.
  //   Spec: return [B, T/k, D], this rank's positions tp_slice(T) of the sum over the ranks of
  //   `partial`, with one collective (B*T*D floats). Unless k divides T, throw a gtl::Error
  //   naming T and k before communicating (tp_slice does). The all-gather's layout question,
  //   in reverse. About 6 lines.
  (void)partial, (void)tp;
  throw gtl::Error("TODO(lab08) step 4a: scatter_sequence is not implemented");
  // END TODO(lab08)
}

// TODO(lab08) step 4b: SequenceParallelMLP's forward and backward on this rank's positions.
//   Spec: tensor_parallel.h, SequenceParallelMLP: y_r = x_r + fc2(gelu(fc1(ln(x_r)))) at this
//   rank's positions, [B, T/k, D], with step 1's cut of fc1 and fc2 and your 4a pair as the
//   group's only communication besides the replicated gradients' all-reduces; backward returns
//   dx_r and writes every gradient, honouring `mode` as nn::Linear does. Which parts need every
//   position, and which only this rank's? Compute each piece with the op the core's layer uses
//   (ops::layernorm_forward/backward, ops::matmul, ops::matmul_out, ops::bias_add_, ops::gelu,
//   ops::gelu_backward, ops::add, ops::sum_rows, Module::write_grad): the checks compare bits.
//   Save exactly what the header lists: the memory check counts every byte still held. What is
//   the backward of each 4a function? A replicated parameter's gradient is a sum over ALL B*T
//   positions, the same on every rank: what does this rank's backward see of that sum?
//   About 35 lines besides the given ones.
Tensor SequenceParallelMLP::forward_impl(const Tensor& x, nn::Context& ctx) {
  GTL_CHECK(x.dim() == 3 && x.size(2) == dim_ && x.dtype() == gtl::DType::Float32,
            "SequenceParallelMLP '" << path() << "': expected float32 [B, T/k, " << dim_
                                    << "], got " << gtl::shape_str(x.shape()));
  namespace ops = gtl::ops;
  (void)ctx;
  throw gtl::Error("TODO(lab08) step 4b: SequenceParallelMLP::forward is not implemented");
}

Tensor SequenceParallelMLP::backward_impl(nn::Context& ctx, const Tensor& dy, nn::GradMode mode) {
  namespace ops = gtl::ops;
  (void)ctx, (void)dy, (void)mode;
  throw gtl::Error("TODO(lab08) step 4b: SequenceParallelMLP::backward is not implemented");
}
// END TODO(lab08)

}  // namespace lab08
