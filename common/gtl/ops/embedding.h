// Embedding lookup and its backward, the scatter-add of row gradients into a table.
//
//   Tensor rows = ops::embedding(table, ids);              // table [V, D], ids [N] -> [N, D]
//   Tensor dtable = ops::embedding_backward(drows, ids, V);  // [V, D]: dtable[v] = sum of drows[n]
//                                                          //   over the n with ids[n] == v
//
// The backward is where determinism is won or lost: several positions hold the same token, so
// several rows of drows add into one row of dtable. A thread per position with atomicAdd (the
// usual GPU scatter) adds in a different order on every run, so the sums differ in the last bits
// from run to run. Here each row of dtable has ONE owner that adds its contributions in position
// order n = 0, 1, ..., N-1, exactly like the CPU loop: CPU and CUDA agree bit for bit, and every
// run gives the same bits.
//   CPU   zero dtable, then for n in order: dtable[ids[n]] += drows[n].
//   CUDA  one thread per (v, d) element of dtable, each scanning all N ids and adding
//         drows[n, d] where ids[n] == v, in order. Work O(V * N) id reads + N * D adds: cheap for
//         the byte-level vocabulary of this course (V = 256); a 50k-token vocabulary would first
//         sort the positions by id (a two-pass segmented sum) instead.
// ids are int64 (or int32). Out-of-range ids are an error on the CPU; on the GPU checking would
// need a copy to the host, so a lookup of one writes a row of NaN (and its gradient goes nowhere).
// The rows and drows are float32 (the residual stream), and so is the table's gradient (a float32
// master's). The table is float32, or a half copy (fp16, bf16: mixed precision's sharded layout,
// nn/flat_parameter.h), whose rows are widened to float32 exactly.
#pragma once

#include "gtl/tensor/tensor.h"

namespace gtl::ops {

Tensor embedding(const Tensor& table, const Tensor& ids);
Tensor embedding_backward(const Tensor& drows, const Tensor& ids, int64_t vocab);

}  // namespace gtl::ops
