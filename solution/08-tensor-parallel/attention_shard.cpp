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
  // SOLUTION(lab08) step 2: this rank's heads and their weights.
  GTL_CHECK(tp_size >= 1 && tp_rank >= 0 && tp_rank < tp_size,
            "shard_attention: rank " << tp_rank << " of a tensor-parallel group of " << tp_size);
  GTL_CHECK(heads % tp_size == 0,
            "shard_attention: " << heads << " heads cannot be split across " << tp_size
                                << " tensor-parallel ranks (a head is never cut: choose a TP "
                                   "size that divides the number of heads)");
  const int64_t local = heads / tp_size, width = local * d, first = tp_rank * width;
  shard.heads = local;
  shard.qkv_weight = Tensor::empty({3 * width, dim});
  shard.qkv_bias = Tensor::empty({3 * width});
  for (int64_t part = 0; part < 3; ++part) {  // q, k, v: each D rows, heads in order
    const int64_t from = part * dim + first, to = part * width;
    shard.qkv_weight.slice(to, to + width).copy_(p[0].value.slice(from, from + width));
    shard.qkv_bias.slice(to, to + width).copy_(p[1].value.slice(from, from + width));
  }
  shard.proj_weight = Tensor::empty({dim, width});
  const float* src = p[2].value.data<float>();
  float* dst = shard.proj_weight.data<float>();
  for (int64_t i = 0; i < dim; ++i)
    for (int64_t j = 0; j < width; ++j) dst[i * width + j] = src[i * dim + first + j];
  // END SOLUTION(lab08)
  return shard;
}

}  // namespace lab08
