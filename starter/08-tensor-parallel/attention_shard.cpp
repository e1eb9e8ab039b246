// Lab 08, TODO 2: which weights of a causal self-attention belong to one rank when the heads are
// split across a tensor-parallel group (tensor_parallel.h, AttentionShard).
//
// Heads are independent until the output projection: each head reads its own d columns of q, k
// and v and writes its own d columns of the merged output. So a rank that owns a group of heads
// needs only the qkv rows that produce them (qkv becomes column-parallel) and only the proj
// columns that read them (proj becomes row-parallel), and nothing crosses ranks in between. How the
// core's fused qkv Linear lays out its 3D output features is in the handout ("Attention by
// heads").
#include <string>

#include "gtl/runtime/error.h"
#include "tensor_parallel.h"

namespace lab08 {

AttentionShard shard_attention(const nn::CausalSelfAttention& full, int tp_rank, int tp_size) {
  const int64_t dim = full.dim(), heads = full.heads(), d = full.head_dim();
  const std::vector<nn::ParamRef> p = full.parameters();  // qkv.weight, qkv.bias, proj.weight,
                                                          // proj.bias
  AttentionShard shard;
  // TODO(lab08) step 2: this rank's heads and their weights.
  //   Spec: see AttentionShard in tensor_parallel.h. Refuse a TP size that does not divide the
  //   heads with a gtl::Error whose message names both numbers (a test checks them); TP sizes
  //   below 1 and ranks outside [0, size) are errors too. The shard's tensors are new
  //   contiguous float32 CPU tensors. Hint: for the qkv weight, first write down which rows of
  //   [3D, D] hold head h's q, its k and its v. About 22 lines.
  (void)tp_rank, (void)tp_size, (void)dim, (void)heads, (void)d, (void)p;
  throw gtl::Error("TODO(lab08) step 2: shard_attention is not implemented");
  // END TODO(lab08)
  return shard;
}

}  // namespace lab08
