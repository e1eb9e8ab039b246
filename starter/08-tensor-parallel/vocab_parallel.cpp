// Lab 08, TODO 3: the vocabulary-parallel embedding and cross-entropy (tensor_parallel.h).
//
// The token table [V, D] and the head that reuses it are the largest matrices of a small-width
// GPT, and the logits [B*T, V] are the largest activation of all. Cutting the vocabulary across
// the tensor-parallel ranks cuts all three, as long as nobody ever reassembles [B*T, V]: the loss
// needs only three numbers per row from each rank.
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

// TODO(lab08) step 3a: VocabParallelEmbedding's forward and backward.
//   Spec: tensor_parallel.h, VocabParallelEmbedding. Forward: the full lookup [B, T, D] float32
//   on every rank, the unsharded TokenEmbedding's bits, from this rank's rows and one
//   collective; an id outside [0, V) is a gtl::Error on every rank. Backward: write (write_grad,
//   `mode`) this rank's [V/k, D] table gradient, bit for bit the unsharded gradient's rows, and
//   return Tensor() (ids have no gradient). About 29 lines.
Tensor VocabParallelEmbedding::forward_impl(const Tensor& ids, nn::Context& ctx) {
  GTL_CHECK(ids.dim() == 2 && ids.dtype() == gtl::DType::Int64,
            "VocabParallelEmbedding '" << path() << "': expected int64 ids [B, T], got "
                                       << gtl::shape_str(ids.shape()));
  (void)ctx;
  throw gtl::Error("TODO(lab08) step 3a: VocabParallelEmbedding::forward is not implemented");
}

Tensor VocabParallelEmbedding::backward_impl(nn::Context& ctx, const Tensor& dy,
                                             nn::GradMode mode) {
  (void)ctx, (void)dy, (void)mode;
  throw gtl::Error("TODO(lab08) step 3a: VocabParallelEmbedding::backward is not implemented");
}
// END TODO(lab08)

// TODO(lab08) step 3b: VocabParallelCrossEntropy's forward and backward.
//   Spec: tensor_parallel.h, VocabParallelCrossEntropy: the three per-row all-reduces in the
//   header's order (a check pins it), the memory budget, a label outside [0, V), V = k * width,
//   a gtl::Error. Every rank returns the same loss; backward reads only what forward saved in
//   ctx.saved, communicates nothing and clears ctx. Hint: logits of 90 and more are in the tests:
//   which stabiliser keeps every exponent of a row <= 0, with one of them exactly 0, on every
//   rank? About 46 lines besides the given ones.
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
  (void)rows, (void)mine, (void)ctx;
  throw gtl::Error("TODO(lab08) step 3b: VocabParallelCrossEntropy::forward is not implemented");
}

Tensor VocabParallelCrossEntropy::backward(nn::Context& ctx, float dloss) const {
  (void)ctx, (void)dloss;
  throw gtl::Error("TODO(lab08) step 3b: VocabParallelCrossEntropy::backward is not implemented");
}
// END TODO(lab08)

}  // namespace lab08
