// Lab 08, TODO 3: the vocabulary-parallel embedding and cross-entropy (tensor_parallel.h).
//
// The token table [V, D] and the head that reuses it are the largest matrices of a small-width
// GPT, and the logits [B*T, V] are the largest activation of all. Cutting the vocabulary across
// the tensor-parallel ranks cuts all three, as long as nobody ever reassembles [B*T, V]: the
// embedding needs only a sum of partial lookups, and the loss needs only three numbers per row
// from each rank.
#include <algorithm>
#include <cmath>
#include <vector>

#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

VocabParallelEmbedding::VocabParallelEmbedding(const nn::TokenEmbedding& full, Communicator& tp)
    : Module("vocab_parallel_embedding"),
      tp_(tp),
      vocab_(full.vocab()),
      dim_(full.dim()),
      rows_(tp_slice(full.vocab(), tp.rank(), tp.world_size(), "vocabulary rows")) {
  add_parameter("weight", full.weight().value.slice(rows_.begin, rows_.end).clone());
}

Tensor VocabParallelEmbedding::forward_impl(const Tensor& ids, nn::Context& ctx) {
  GTL_CHECK(ids.dim() == 2 && ids.dtype() == gtl::DType::Int64,
            "VocabParallelEmbedding '" << path() << "': expected int64 ids [B, T], got "
                                       << gtl::shape_str(ids.shape()));
  // TODO(lab08) step 3a: the lookup of this rank's rows, completed across the group.
  //   Spec: see VocabParallelEmbedding in tensor_parallel.h: [B, T, D] float32, the same bits as
  //   the unsharded TokenEmbedding on every rank. An id outside [0, V) is a gtl::Error.
  //   About 14 lines.
  (void)ctx;
  throw gtl::Error("TODO(lab08) step 3a: VocabParallelEmbedding::forward is not implemented");
  // END TODO(lab08)
}

Tensor VocabParallelEmbedding::backward_impl(nn::Context& ctx, const Tensor& dy,
                                             nn::GradMode mode) {
  // TODO(lab08) step 3a: the gradient of this rank's rows.
  //   Spec: dy [B, T, D]; write (write_grad, `mode`) this rank's [V/k, D] table gradient, each
  //   row the sum of dy's rows of the positions holding that id, added in position order (then
  //   it equals the unsharded gradient's rows bit for bit). Return Tensor() (no gradient for
  //   ids). About 12 lines.
  (void)ctx, (void)dy, (void)mode;
  throw gtl::Error("TODO(lab08) step 3a: VocabParallelEmbedding::backward is not implemented");
  // END TODO(lab08)
}

Tensor VocabParallelCrossEntropy::forward(const Tensor& local_logits, const Tensor& labels,
                                          nn::Context& ctx) const {
  GTL_CHECK(
      local_logits.dim() == 2 && local_logits.dtype() == gtl::DType::Float32 && labels.dim() == 1 &&
          labels.dtype() == gtl::DType::Int64 && labels.size(0) == local_logits.size(0),
      "VocabParallelCrossEntropy: expected float32 local logits [N, V/k] and int64 labels "
      "[N], got "
          << gtl::shape_str(local_logits.shape()) << " and " << gtl::shape_str(labels.shape()));
  const int64_t rows = local_logits.size(0), width = local_logits.size(1);
  const Slice mine = {tp_.rank() * width, (tp_.rank() + 1) * width};
  // TODO(lab08) step 3b: the mean cross-entropy without the full logits.
  //   Spec: see VocabParallelCrossEntropy in tensor_parallel.h (the three all-reduces, their
  //   order, the memory budget). Labels outside [0, V), V = k * width, are a gtl::Error. Every
  //   rank returns the same loss. Save what backward needs in ctx.saved.
  //   Hint: the stabiliser must make the largest exponent of the row exactly 0 on every rank:
  //   logits of 90 and more are in the tests. About 30 lines.
  (void)rows, (void)mine, (void)ctx;
  throw gtl::Error("TODO(lab08) step 3b: VocabParallelCrossEntropy::forward is not implemented");
  // END TODO(lab08)
}

Tensor VocabParallelCrossEntropy::backward(nn::Context& ctx, float dloss) const {
  // TODO(lab08) step 3b: this rank's columns of dlogits.
  //   Spec: dloss * (softmax - onehot(label)) / N on this rank's columns only, [N, V/k] float32,
  //   from what forward saved; no communication; clear ctx. About 14 lines.
  (void)ctx, (void)dloss;
  throw gtl::Error("TODO(lab08) step 3b: VocabParallelCrossEntropy::backward is not implemented");
  // END TODO(lab08)
}

}  // namespace lab08
