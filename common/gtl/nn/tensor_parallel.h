// Tensor parallelism (TP) for the core's GPT, Megatron-LM's layout: each layer of a whole model
// cut into the shard that rank r of a TP group of k ranks holds, built FROM the whole layer
// (rank r copies its slice of the whole weights), so that a TP model starts from exactly the
// weights of one process and can be compared with it. GPTStage (gpt_stage.h) builds its layers
// with these when it is given a TP group.
//
//   layer                     rank r holds                                   communication
//   qkv, fc1 (column)         rows of W and b: its heads' q, k, v; fc1's     dx all-reduced
//                             4D/k outputs
//   proj, fc2 (row)           columns of W: its heads' / its 4D/k inputs;    y all-reduced
//                             all of b
//   LayerNorms, position      whole (every rank computes the same)           none
//   table
//   token table (and the      rows [r V/k, (r+1) V/k)                        lookup all-reduced;
//   head that reads it)                                                      the head's dx too
//
// Per block and pass that is two all-reduces of [N, D] (forward: proj's and fc2's; backward:
// qkv's and fc1's dx), the same bits on every rank after each, so every tensor outside the
// column/row pairs (the residual stream, the LayerNorms, their gradients) is the same on every
// rank and needs no gradient synchronisation inside the group. k must divide the heads (a head is
// never cut) and the vocabulary (this course refuses rather than pads).
//
// Sequence parallelism (SP, `sequence_parallel`; parallel_linear.h): the same shards, but
// between the pairs each rank holds its own N/k tokens: the column layers all-gather their input,
// the row layers reduce-scatter their output, and the LayerNorms, which then see only their
// rank's tokens, all-reduce their two gradients (layernorm.h). Per block and pass that is two
// all-gathers and two reduce-scatters of [N, D] in place of the two all-reduces (the same bytes),
// and the LayerNorms' saved tensors and the residual stream cut in k.
#pragma once

#include <memory>

#include "gtl/distributed/communicator.h"
#include "gtl/nn/gpt_block.h"
#include "gtl/nn/layernorm.h"
#include "gtl/nn/linear.h"
#include "gtl/nn/parallel_linear.h"
#include "gtl/nn/token_embedding.h"
#include "gtl/nn/vocab_parallel.h"

namespace gtl::nn::tensor_parallel {

// The part [begin, end) of n things (features, heads, vocabulary rows) that rank `rank` of a
// group of `size` holds: n / size contiguous ones, rank 0 first. Throws gtl::Error naming `what`
// unless size >= 1 divides n.
struct Part {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
Part part(int64_t n, int rank, int size, const char* what);

// A whole Linear (with a bias unless it has none) cut by output features (Column) or by input
// features (Row) for this rank of `tp`.
std::unique_ptr<ParallelLinear> shard(const Linear& full, ParallelLinear::Split split,
                                      dist::Communicator& tp, bool sequence_parallel = false);
// A whole GPTBlock (gpt_block.h): ln1 and the MLP's ln whole, the attention's heads split (qkv
// column-parallel over its heads' q, k and v rows, proj row-parallel), the MLP's fc1 column- and
// fc2 row-parallel. Parameter names as in the whole block; shapes the shards'.
std::unique_ptr<GPTBlock> shard(const GPTBlock& full, dist::Communicator& tp,
                                bool sequence_parallel = false);
// A copy of a whole LayerNorm for every rank; under SP it sums its gradients over `tp`.
std::unique_ptr<Module> copy(const LayerNorm& full, dist::Communicator& tp, bool sequence_parallel);
// A whole token table cut by rows (vocab_parallel.h).
std::unique_ptr<VocabParallelEmbedding> shard(const TokenEmbedding& full, dist::Communicator& tp);

}  // namespace gtl::nn::tensor_parallel
